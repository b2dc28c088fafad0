package lludp

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Options are LLUDP's own settings of a conn: the circuit a client
// presents (rudp's Config.Circuit). A zero Code is replaced by a random
// one.
type Options struct {
	Circuit Circuit
}

const (
	// ackDelay is how long an ack waits for a datagram to ride on. The
	// viewer waits up to 100 ms; acknowledging sooner keeps the sender's
	// window of unacknowledged messages moving.
	ackDelay = 2 * time.Millisecond
	// streamQueued bounds the messages a stream may have unacknowledged:
	// half the 65,536 sequence numbers behind which a receiver takes a
	// datagram as new (see Bounds), so that the congestion controller,
	// not this bound, sets the flight.
	streamQueued = 1 << 15
	// streamRTOMin is the floor of a stream's RFC 6298 resend timeout.
	// Streams run between rudp peers, so they time resends from the acks
	// (Config.AckRTT) rather than with the viewer's 1 s floor, which
	// would stall a stream for a second per loss.
	streamRTOMin = 10 * time.Millisecond
)

// Protocol describes LLUDP to the package above the engines; its options
// are an Options. A stream's frames ride in message number
// StreamMessage; a message conn's Read and Write put the message number,
// as on the wire before zerocoding, before the body.
var Protocol = engine.Protocol{
	Name:      "lludp",
	IsOpening: func(p []byte, _ any) bool { return IsOpening(p) },
	OpeningID: openingID,
	Validate:  func(*engine.Setup) error { return nil },
	New:       newFromSetup,
	Stream: engine.StreamCarrier{
		Send:    engine.SendOptions{MessageNumber: StreamMessage},
		IsFrame: func(m engine.Message) bool { return m.MessageNumber == StreamMessage },
	},
	Header: &engine.MessageHeader{
		Put: func(dst []byte, m engine.Message) int { return PutNumber(dst, m.MessageNumber) },
		Parse: func(p []byte) (engine.Message, error) {
			if len(p) == 0 {
				return engine.Message{Data: p}, nil // refused as empty
			}
			num, k := ParseNumber(p)
			if k == 0 {
				return engine.Message{}, fmt.Errorf("%w: LLUDP Write of %d bytes, too short for its message number (1, 2 or 4 bytes)", engine.ErrUnsupported, len(p))
			}
			return engine.Message{MessageNumber: num, Data: p[k:]}, nil
		},
	},
	Describe: Describe,
	Handshake: func(_ any, what string) (string, string, string) {
		return "lludp " + what + " handshake", "another protocol", ""
	},
}

// openingID returns the circuit code of UseCircuitCode p (IsOpening),
// read from its body, which a resend repeats; its header's flags change
// (RESENT, docs/protocols/lludp.md §3.2). False for any other datagram. It reads p
// in place.
func openingID(p []byte) (uint64, bool) {
	if !IsOpening(p) {
		return 0, false
	}
	const number = 4 // a Low message number, as IsOpening requires
	return uint64(binary.LittleEndian.Uint32(p[HeaderLen+number+int(p[5]):])), true
}

// newFromSetup builds an LLUDP session of one association. Message conns
// keep the viewer's timing, sequence numbers from 1 and its keepalive;
// streams, between rudp peers, time resends from the acks, start at a
// random sequence number so that a blind attacker cannot guess which
// numbers are in use, and probe at the stream keepalive.
func newFromSetup(s *engine.Setup) (engine.Engine, error) {
	circuit := engine.OptionsOf[Options](s.Options).Circuit
	if circuit.Code == 0 && !s.Accept {
		code, err := randomCode(s.Rand)
		if err != nil {
			return nil, err
		}
		circuit.Code = code
	}
	limit := s.ResendLimit
	if limit <= 0 {
		limit = -1 // unlimited: IdleTimeout ends a dead circuit
	}
	var rtoMin time.Duration // message conns: the viewer's resend timing
	maxQueued := 0           // message conns: the default
	var seq uint32           // message conns: 1, as the viewer
	maxDatagram := min(s.MTU, DefaultMaxDatagram)
	keepAlive := min(s.KeepAlive, DefaultKeepAlive) // message conns: as the viewer
	if s.Stream {
		rtoMin = streamRTOMin
		maxQueued = streamQueued
		seq = uint32(s.Random64()%(SeqWrap-1)) + 1
		maxDatagram -= s.Overhead
		keepAlive = s.StreamKeepAlive()
	}
	return New(s.Now, Config{
		AckRTT:               s.Stream,
		DeliverDuplicates:    s.Stream,
		RepeatAcks:           s.Stream,
		RTOMin:               rtoMin,
		Client:               !s.Accept,
		Circuit:              circuit,
		Accept:               s.Accept,
		MaxDatagram:          maxDatagram,
		AckDelay:             ackDelay,
		ResendLimit:          limit,
		MaxQueued:            maxQueued,
		InitialSeq:           seq,
		Congestion:           s.Congestion,
		Logger:               s.Logger,
		Tracer:               s.Tracer,
		KeepAlive:            keepAlive,
		PingWhenQuiet:        s.Stream,
		IdleTimeout:          s.IdleTimeout,
		HandshakeTimeout:     s.HandshakeTimeout,
		Linger:               s.Linger,
		RejectNewPeerSession: s.Stream,
	})
}

// randomCode draws a nonzero circuit code from r (crypto/rand when nil).
func randomCode(r io.Reader) (uint32, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [4]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, fmt.Errorf("rudp: circuit code: %w", err)
		}
		if v := binary.BigEndian.Uint32(b[:]); v != 0 {
			return v, nil
		}
	}
}
