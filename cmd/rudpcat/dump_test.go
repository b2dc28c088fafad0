package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"github.com/stretchr/testify/require"
)

// dumpVector is one datagram of an engine's reference vectors.
type dumpVector struct {
	proto string
	b     []byte
}

// loadDumpVectors reads the first datagrams of each protocol's vector
// file: n of each.
func loadDumpVectors(t testing.TB, n int) []dumpVector {
	t.Helper()
	read := func(name string, v any) {
		raw, err := os.ReadFile(filepath.Join("..", "..", "internal", name))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, v))
	}
	var out []dumpVector
	add := func(proto string, hexes []string) {
		for _, h := range hexes[:min(n, len(hexes))] {
			b, err := hex.DecodeString(h)
			require.NoError(t, err)
			out = append(out, dumpVector{proto, b})
		}
	}
	var air struct{ Packets []struct{ Hex string } }
	read("airhook/testdata/airhook.json", &air)
	var hs []string
	for _, p := range air.Packets {
		hs = append(hs, p.Hex)
	}
	add("airhook", hs)
	var por struct {
		Captures []struct{ Frames []struct{ Hex string } }
	}
	read("porous/testdata/porous.json", &por)
	hs = nil
	for _, f := range por.Captures[0].Frames {
		hs = append(hs, f.Hex)
	}
	add("porous", hs)
	var ll struct{ Packets []struct{ Hex string } }
	read("lludp/testdata/lludp.json", &ll)
	hs = nil
	for _, p := range ll.Packets {
		hs = append(hs, p.Hex)
	}
	add("lludp", hs)
	var wf struct{ Vectors []struct{ Hex string } }
	read("wirefox/testdata/wirefox.json", &wf)
	hs = nil
	for _, v := range wf.Vectors {
		hs = append(hs, v.Hex)
	}
	add("wirefox", hs)
	var av struct{ Vectors []struct{ Hex string } }
	read("avara/testdata/avara.json", &av)
	hs = nil
	for _, v := range av.Vectors {
		hs = append(hs, v.Hex)
	}
	add("avara", hs)
	return out
}

var dumpT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// ethernetUDP builds an Ethernet/IPv4/UDP frame from 10.0.0.1:4000 to
// 10.0.0.2:5000 carrying payload.
func ethernetUDP(t testing.TB, payload []byte) []byte {
	t.Helper()
	eth := &layers.Ethernet{
		SrcMAC:       net.HardwareAddr{2, 0, 0, 0, 0, 1},
		DstMAC:       net.HardwareAddr{2, 0, 0, 0, 0, 2},
		EthernetType: layers.EthernetTypeIPv4,
	}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP,
		SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2)}
	udp := &layers.UDP{SrcPort: 4000, DstPort: 5000}
	require.NoError(t, udp.SetNetworkLayerForChecksum(ip))
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	require.NoError(t, gopacket.SerializeLayers(buf, opts, eth, ip, udp, gopacket.Payload(payload)))
	return buf.Bytes()
}

// writePcap writes the payloads as a pcap file, 10 ms apart, and returns
// its path.
func writePcap(t *testing.T, payloads [][]byte) string {
	t.Helper()
	var out bytes.Buffer
	w := pcapgo.NewWriter(&out)
	require.NoError(t, w.WriteFileHeader(65535, layers.LinkTypeEthernet))
	for i, p := range payloads {
		frame := ethernetUDP(t, p)
		ci := gopacket.CaptureInfo{Timestamp: dumpT0.Add(time.Duration(i) * 10 * time.Millisecond), CaptureLength: len(frame), Length: len(frame)}
		require.NoError(t, w.WritePacket(ci, frame))
	}
	path := filepath.Join(t.TempDir(), "capture.pcap")
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o600))
	return path
}

func dumpLines(t *testing.T, args ...string) []string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, runDump(args, &out))
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

func TestDumpPcap(t *testing.T) {
	vs := loadDumpVectors(t, 2)
	var payloads [][]byte
	for _, v := range vs {
		payloads = append(payloads, v.b)
	}
	// A datagram none of the protocols decodes, longer than 64 bytes.
	payloads = append(payloads, bytes.Repeat([]byte{0xff}, 65))
	path := writePcap(t, payloads)
	require.Equal(t, []string{
		"0.000000 10.0.0.1:4000 -> 10.0.0.2:5000 8 airhook ack flags=S observed_seq=0 seq=1 session=168430090",
		"0.010000 10.0.0.1:4000 -> 10.0.0.2:5000 12 airhook ack flags=O|S observed_seq=1 seq=2 observed_session=168430090 session=185273099",
		"0.020000 10.0.0.1:4000 -> 10.0.0.2:5000 11 porous connect version=0 num_channels=2 max_rx_bandwidth=100000000 nonce=3559948365",
		"0.030000 10.0.0.1:4000 -> 10.0.0.2:5000 5 porous connect_ack nonce=3559948365",
		`0.040000 10.0.0.1:4000 -> 10.0.0.2:5000 23 lludp ack flags="" seq=1`,
		"    message number=4294967291 frequency=fixed length=13 data_prefix=03010000000200000003000000 ids=[1 2 3]",
		"0.050000 10.0.0.1:4000 -> 10.0.0.2:5000 32 lludp ack flags=appended_acks seq=1 acks=[2 1]",
		"    message number=4294967291 frequency=fixed length=13 data_prefix=03010000000200000003000000 ids=[1 2 3]",
		"0.060000 10.0.0.1:4000 -> 10.0.0.2:5000 37 wirefox out_of_band flags=DAT datagram_id=0 data_length=30",
		`    connect_attempt packet_id=0 flags="" options="" channel=0 offset=0 command=2 length=19 data_prefix=0257495245464f58003efe7d4f2231ac protocol_version=0 peer_id=4539203253265607717 opcode=initial_client`,
		"0.070000 10.0.0.1:4000 -> 10.0.0.2:5000 37 wirefox out_of_band flags=DAT datagram_id=0 data_length=30",
		`    connect_attempt packet_id=0 flags="" options="" channel=0 offset=0 command=2 length=19 data_prefix=0257495245464f5800777db20b2616d3 protocol_version=0 peer_id=8610233823555670818 opcode=initial_server`,
		"0.080000 10.0.0.1:4000 -> 10.0.0.2:5000 16 avara data crc=59303 ack=65534",
		"    message serial=0 send_count=0 command=-8 sender=-1 p1=0 p2=0 p3=74565 length=1 data_prefix=00",
		"0.090000 10.0.0.1:4000 -> 10.0.0.2:5000 8 avara ack crc=41372 ack=10 ackmap=10",
		"0.100000 10.0.0.1:4000 -> 10.0.0.2:5000 65 ? -",
		"    error: no protocol decodes it",
		"    hex: " + strings.Repeat("ff", 64) + "…",
	}, dumpLines(t, path))

	// With -p, a datagram of another protocol is printed with the error.
	require.Equal(t, []string{
		"0.000000 10.0.0.1:4000 -> 10.0.0.2:5000 8 porous -",
		"    error: malformed datagram: porous: unknown frame type",
		"    hex: 080000010a0a0a0a",
	}, dumpLines(t, "-p", "porous", path)[:3])

	// -port filters on the UDP ports.
	require.Equal(t, []string{""}, dumpLines(t, "-port", "9", path))
	require.Len(t, dumpLines(t, "-port", "5000", path), 18)
}

func TestDumpPcapng(t *testing.T) {
	var out bytes.Buffer
	w, err := pcapgo.NewNgWriter(&out, layers.LinkTypeEthernet)
	require.NoError(t, err)
	for i, v := range loadDumpVectors(t, 1) {
		frame := ethernetUDP(t, v.b)
		ci := gopacket.CaptureInfo{Timestamp: dumpT0.Add(time.Duration(i) * time.Second), CaptureLength: len(frame), Length: len(frame)}
		require.NoError(t, w.WritePacket(ci, frame))
	}
	require.NoError(t, w.Flush())
	path := filepath.Join(t.TempDir(), "capture.pcapng")
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o600))
	require.Equal(t, []string{
		"0.000000 10.0.0.1:4000 -> 10.0.0.2:5000 8 airhook ack flags=S observed_seq=0 seq=1 session=168430090",
		"1.000000 10.0.0.1:4000 -> 10.0.0.2:5000 11 porous connect version=0 num_channels=2 max_rx_bandwidth=100000000 nonce=3559948365",
		`2.000000 10.0.0.1:4000 -> 10.0.0.2:5000 23 lludp ack flags="" seq=1`,
		"    message number=4294967291 frequency=fixed length=13 data_prefix=03010000000200000003000000 ids=[1 2 3]",
		"3.000000 10.0.0.1:4000 -> 10.0.0.2:5000 37 wirefox out_of_band flags=DAT datagram_id=0 data_length=30",
		`    connect_attempt packet_id=0 flags="" options="" channel=0 offset=0 command=2 length=19 data_prefix=0257495245464f58003efe7d4f2231ac protocol_version=0 peer_id=4539203253265607717 opcode=initial_client`,
		"4.000000 10.0.0.1:4000 -> 10.0.0.2:5000 16 avara data crc=59303 ack=65534",
		"    message serial=0 send_count=0 command=-8 sender=-1 p1=0 p2=0 p3=74565 length=1 data_prefix=00",
	}, dumpLines(t, path))
}

func TestDumpErrors(t *testing.T) {
	var out bytes.Buffer
	require.ErrorContains(t, runDump([]string{"-p", "tcp", "x"}, &out), `unknown protocol "tcp"`)
	require.ErrorContains(t, runDump(nil, &out), "want one FILE or -listen ADDR")
	path := filepath.Join(t.TempDir(), "not.pcap")
	require.NoError(t, os.WriteFile(path, []byte("hello world"), 0o600))
	require.EqualError(t, runDump([]string{path}, &out), "not a pcap or pcapng file (magic 68656c6c)")
	require.NoError(t, runDump([]string{"-h"}, &out))
	require.Equal(t, dumpUsage, out.String())
}

// FuzzDump checks that arbitrary bytes as a capture file never panic.
func FuzzDump(f *testing.F) {
	var pcap bytes.Buffer
	w := pcapgo.NewWriter(&pcap)
	require.NoError(f, w.WriteFileHeader(65535, layers.LinkTypeEthernet))
	for _, v := range loadDumpVectors(f, 1) {
		frame := ethernetUDP(f, v.b)
		require.NoError(f, w.WritePacket(gopacket.CaptureInfo{Timestamp: dumpT0, CaptureLength: len(frame), Length: len(frame)}, frame))
	}
	f.Add(pcap.Bytes())
	var ng bytes.Buffer
	nw, err := pcapgo.NewNgWriter(&ng, layers.LinkTypeEthernet)
	require.NoError(f, err)
	frame := ethernetUDP(f, []byte{4, 0, 0})
	require.NoError(f, nw.WritePacket(gopacket.CaptureInfo{Timestamp: dumpT0, CaptureLength: len(frame), Length: len(frame)}, frame))
	require.NoError(f, nw.Flush())
	f.Add(ng.Bytes())
	// An interface whose time resolution makes gopacket divide by zero.
	f.Add([]byte("\n\r\r\nD\x00\x00\x00M<+\x1a\x01\x00\x00\x000000000000 \x00A000000000000000000000000000000000\x00\x000000\x01\x00\x00\x000\x00\x00\x0000000000\t\x00\x00\x00\x00\x00\x00\x0000000000000000000000000000000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := &dumper{w: bufio.NewWriter(io.Discard)}
		_ = d.capture(bytes.NewReader(b), 0)
	})
}
