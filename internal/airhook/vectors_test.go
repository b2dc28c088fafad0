package airhook

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// testdata/airhook.json holds the bytes the reference produced: packets
// produced by the airhook-2 C library, receiver cases and a UDP trace.

type vecFile struct {
	Packets       []vecPacket `json:"packets"`
	ReceiverCases struct {
		Steps []vecStep `json:"steps"`
	} `json:"receiver_cases"`
	UDPTrace struct {
		Packets []vecTracePacket `json:"packets"`
	} `json:"udp_trace"`
}

type vecFields struct {
	Flags           string `json:"flags"`
	ObservedSeq     int    `json:"observed_seq"`
	Seq             int    `json:"seq"`
	ObservedSession string `json:"observed_session"`
	Session         string `json:"session"`
	NextMsg         int    `json:"next_msg"`
	NextMsgAbsent   bool   `json:"next_msg_absent"`
	Missed          []int  `json:"missed"`
}

type vecMessage struct {
	ID   int    `json:"id"`
	Len  int    `json:"len"`
	Hex  string `json:"hex"`
	Text string `json:"text"`
}

type vecPacket struct {
	ID            string       `json:"id"`
	Scenario      string       `json:"scenario"`
	Time          float64      `json:"time"`
	Direction     string       `json:"direction"`
	Note          string       `json:"note"`
	Dropped       bool         `json:"dropped"`
	Hex           string       `json:"hex"`
	Length        int          `json:"length"`
	Fields        vecFields    `json:"fields"`
	Messages      []vecMessage `json:"messages"`
	Delivered     []string     `json:"delivered"`
	ReceiveReturn *int         `json:"receive_return"`
}

type vecStep struct {
	Input         string   `json:"input"`
	AdvanceClockS float64  `json:"advance_clock_s"`
	ReceiveReturn *int     `json:"receive_return"`
	Delivered     []string `json:"delivered"`
	Response      string   `json:"response"`
	Note          string   `json:"note"`
}

type vecTracePacket struct {
	Direction    string    `json:"direction"`
	Hex          string    `json:"hex"`
	Summary      string    `json:"summary"`
	Fields       vecFields `json:"fields"`
	MessageCount int       `json:"message_count"`
}

// unhex decodes a vector's hexadecimal bytes.
var unhex = enginetest.Unhex

func loadVectors(t testing.TB) *vecFile {
	t.Helper()
	v := enginetest.LoadJSON[vecFile](t, "testdata/airhook.json")
	require.Len(t, v.Packets, 19)
	return v
}

// allVectorHex returns every datagram of the vector file: packets,
// receiver-case inputs and responses, and the UDP trace.
func allVectorHex(v *vecFile) []string {
	var out []string
	for _, p := range v.Packets {
		out = append(out, p.Hex)
	}
	for _, s := range v.ReceiverCases.Steps {
		for _, h := range []string{s.Input, s.Response} {
			if h != "" {
				out = append(out, h)
			}
		}
	}
	for _, p := range v.UDPTrace.Packets {
		out = append(out, p.Hex)
	}
	return out
}

func parseHex32(t testing.TB, s string) uint32 {
	t.Helper()
	if s == "" {
		return 0
	}
	return uint32(enginetest.ParseUint(t, s, 0, 32))
}

// vecTime maps the vectors' synthetic clock (seconds) to a time, rounded
// to the microsecond so that differences such as 1001.04 − 1000.04 are
// exact.
func vecTime(sec float64) time.Time {
	return time.Unix(0, 0).Add(time.Duration(math.Round(sec*1e6)) * time.Microsecond)
}

// requireFields checks a decoded packet against the vector's fields.
func requireFields(t *testing.T, f vecFields, p *Packet, name string) {
	t.Helper()
	flags, err := strconv.ParseUint(f.Flags, 0, 8)
	require.NoError(t, err, name)
	require.Equal(t, uint8(flags), p.Flags(), name)
	require.Equal(t, uint8(f.ObservedSeq), p.ObservedSeq, name)
	require.Equal(t, uint16(f.Seq), p.Seq, name)
	require.Equal(t, parseHex32(t, f.ObservedSession), p.ObservedSession, name)
	require.Equal(t, parseHex32(t, f.Session), p.Session, name)
	require.Equal(t, uint8(f.NextMsg), p.Next, name)
	require.Equal(t, f.NextMsgAbsent, p.Flags()&flagNext == 0, name)
	var missed []uint8
	for _, m := range f.Missed {
		missed = append(missed, uint8(m))
	}
	require.Equal(t, missed, p.Missed, name)
}
