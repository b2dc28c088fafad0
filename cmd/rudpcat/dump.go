package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/rudpkit/rudp/internal/airhook"
	"github.com/rudpkit/rudp/internal/avara"
	"github.com/rudpkit/rudp/internal/lludp"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/rudpkit/rudp/internal/wirefox"
	"github.com/rudpkit/rudp/trace"
)

// dumpUsage is the usage text of rudpcat dump.
const dumpUsage = `usage: rudpcat dump [-p PROTOCOL] [-port N] FILE
       rudpcat dump [-p PROTOCOL] -listen ADDR

Decodes the UDP datagrams of a pcap or pcapng capture (Ethernet, Linux
cooked, raw IPv4/IPv6 or loopback link types), or those arriving at a UDP
socket on ADDR until interrupted, and prints one line per datagram: the
time in seconds since the first, source -> destination, the UDP payload
size, the protocol, the datagram type and its header fields; then one
indented line per frame, packet or message with its fields. Byte fields
are printed in hex, lists of sequence numbers as [a b c]. A datagram that
does not decode is printed with the error and its first 64 bytes in hex.

Without -p, each datagram is tried as avara, porous, wirefox, lludp and
airhook in that order and shown as the first that decodes it (a guess:
give -p when the protocol is known; encrypted Wirefox datagrams are only
recognised with -p wirefox).

Flags:
  -p PROTOCOL  airhook, porous, lludp, wirefox or avara
  -port N      only datagrams from or to UDP port N (files)
  -listen ADDR read datagrams from a UDP socket bound to ADDR
`

// dumpOrder is the order in which dump tries the protocols without -p:
// the strictest codecs first (Avara's checksum, POROUS's exact sizes).
var dumpOrder = []string{"avara", "porous", "wirefox", "lludp", "airhook"}

// describers maps a protocol name to its codec's Describe.
var describers = map[string]func([]byte) trace.Datagram{
	"airhook": airhook.Describe,
	"porous":  porous.Describe,
	"lludp":   lludp.Describe,
	"wirefox": wirefox.Describe,
	"avara":   avara.Describe,
}

// Bounds of dump.
const (
	dumpHexMax   = 64      // bytes of a malformed datagram shown in hex
	dumpSnapMax  = 1 << 18 // largest packet read from a pcap file, in bytes
	dumpRecvSize = 1 << 16 // receive buffer of -listen, in bytes
)

// runDump runs "rudpcat dump" with args (the arguments after "dump") and
// writes the decoded datagrams to stdout. It returns an error for a bad
// command line, a file that cannot be opened or is not a capture, or a
// socket that cannot be opened; a datagram that does not decode is
// printed, never an error.
func runDump(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	proto := fs.String("p", "", "protocol")
	port := fs.Int("port", 0, "UDP port")
	listen := fs.String("listen", "", "UDP address")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, err = io.WriteString(stdout, dumpUsage)
			return err
		}
		return fmt.Errorf("%w\n%s", err, dumpUsage)
	}
	if *proto != "" && describers[*proto] == nil {
		return fmt.Errorf("unknown protocol %q: want airhook, porous, lludp, wirefox or avara", *proto)
	}
	if *port < 0 || *port > 65535 {
		return fmt.Errorf("-port %d out of 0..65535", *port)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	d := &dumper{w: w, proto: *proto}
	switch {
	case *listen != "" && fs.NArg() == 0:
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return d.listen(ctx, *listen)
	case *listen == "" && fs.NArg() == 1:
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return err
		}
		defer f.Close()
		return d.capture(f, uint16(*port))
	}
	return fmt.Errorf("want one FILE or -listen ADDR\n%s", dumpUsage)
}

// dumper prints datagrams.
type dumper struct {
	w     *bufio.Writer
	proto string    // "" to recognise each datagram
	first time.Time // time of the first datagram
	seen  bool
}

// capture prints the UDP datagrams of the pcap or pcapng file r, those
// from or to port when port is not 0.
func (d *dumper) capture(r io.Reader, port uint16) error {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if err != nil {
		return fmt.Errorf("not a pcap or pcapng file: %w", err)
	}
	var src gopacket.PacketDataSource
	var link layers.LinkType
	switch string(magic) {
	case "\x0a\x0d\x0d\x0a":
		var ng *pcapgo.NgReader
		err := guard(func() (err error) {
			ng, err = pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
			return err
		})
		if err != nil {
			return fmt.Errorf("pcapng: %w", err)
		}
		src, link = ng, ng.LinkType()
	case "\xa1\xb2\xc3\xd4", "\xd4\xc3\xb2\xa1", "\xa1\xb2\x3c\x4d", "\x4d\x3c\xb2\xa1":
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return fmt.Errorf("pcap: %w", err)
		}
		if s := pr.Snaplen(); s == 0 || s > dumpSnapMax {
			pr.SetSnaplen(dumpSnapMax)
		}
		src, link = pr, pr.LinkType()
	default:
		return fmt.Errorf("not a pcap or pcapng file (magic %x)", magic)
	}
	for {
		var data []byte
		var ci gopacket.CaptureInfo
		err := guard(func() (err error) {
			data, ci, err = src.ReadPacketData()
			return err
		})
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the capture: %w", err)
		}
		pkt := gopacket.NewPacket(data, link, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
		udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if udp == nil || port != 0 && uint16(udp.SrcPort) != port && uint16(udp.DstPort) != port {
			continue
		}
		var from, to string
		if nl := pkt.NetworkLayer(); nl != nil {
			f := nl.NetworkFlow()
			from = net.JoinHostPort(f.Src().String(), strconv.Itoa(int(udp.SrcPort)))
			to = net.JoinHostPort(f.Dst().String(), strconv.Itoa(int(udp.DstPort)))
		}
		d.datagram(ci.Timestamp, from, to, udp.Payload)
	}
}

// errReaderPanic is returned for a capture whose reading panicked.
var errReaderPanic = errors.New("malformed capture")

// guard runs f and turns a panic into errReaderPanic: gopacket's pcapng
// reader divides by a time resolution read from the file, which may be
// zero, and so panics on some malformed files.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errReaderPanic, r)
		}
	}()
	return f()
}

// listen prints the datagrams arriving at a UDP socket bound to addr
// until ctx ends.
func (d *dumper) listen(ctx context.Context, addr string) error {
	c, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	local := c.LocalAddr().String()
	buf := make([]byte, dumpRecvSize)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		d.datagram(time.Now(), from.String(), local, buf[:n])
		if err := d.w.Flush(); err != nil {
			return err
		}
	}
}

// describe decodes b as d.proto, or as the first protocol of dumpOrder
// that decodes it.
func (d *dumper) describe(b []byte) trace.Datagram {
	if d.proto != "" {
		return describers[d.proto](b)
	}
	for _, name := range dumpOrder {
		if t := describers[name](b); t.Err == nil && t.Type != "sealed" {
			return t
		}
	}
	return trace.Datagram{Protocol: "?", Err: errors.New("no protocol decodes it")}
}

// datagram prints one datagram received at t from one address to another.
func (d *dumper) datagram(t time.Time, from, to string, b []byte) {
	if !d.seen {
		d.first, d.seen = t, true
	}
	dg := d.describe(b)
	w := d.w
	fmt.Fprintf(w, "%.6f %s -> %s %d %s %s", t.Sub(d.first).Seconds(), orDash(from), orDash(to), len(b), dg.Protocol, orDash(dg.Type))
	writeFields(w, dg.Fields)
	w.WriteByte('\n')
	for _, f := range dg.Frames {
		fmt.Fprintf(w, "    %s", f.Type)
		writeFields(w, f.Fields)
		w.WriteByte('\n')
	}
	if dg.Err != nil {
		fmt.Fprintf(w, "    error: %v\n    hex: %x", dg.Err, b[:min(len(b), dumpHexMax)])
		if len(b) > dumpHexMax {
			w.WriteString("…")
		}
		w.WriteByte('\n')
	}
}

// writeFields writes " name=value" for each field.
func writeFields(w *bufio.Writer, fs []trace.Field) {
	for _, f := range fs {
		w.WriteByte(' ')
		w.WriteString(f.Name)
		w.WriteByte('=')
		w.WriteString(fieldValue(f.Value))
	}
}

// fieldValue formats a field's value: []byte in hex, []uint32 as
// [a b c], an empty string as "", anything else as fmt's %v.
func fieldValue(v any) string {
	switch v := v.(type) {
	case []byte:
		return hex.EncodeToString(v)
	case []uint32:
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = strconv.FormatUint(uint64(x), 10)
		}
		return "[" + strings.Join(s, " ") + "]"
	case string:
		if v == "" {
			return `""`
		}
		return v
	}
	return fmt.Sprint(v)
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
