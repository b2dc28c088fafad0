// Package qlog writes the events of package trace as qlog files, for
// viewing a rudp conn's life in qlog tools, and reads them back.
//
// # What it writes
//
// NewConnTracer returns a trace.ConnTracer that writes one qlog trace in
// the JSON-SEQ serialization (RFC 7464): every record is the byte 0x1E, a
// JSON text and a line feed (0x0A). The first record is the header: the
// file_schema "urn:ietf:params:qlog:file:sequential" and
// serialization_format "application/qlog+json-seq" of
// draft-ietf-quic-qlog-main-schema-10 §5 and §11, together with the
// qlog_version "0.3" and qlog_format "JSON-SEQ" members that
// draft-ietf-quic-qlog-main-schema-05 defines and that the qvis viewer
// reads, and one trace whose common_fields give time_format "relative",
// the reference_time (milliseconds since the Unix epoch of the first
// event) and protocol_type ["RUDP-<protocol>"], and whose vantage_point
// type is "client" or "server". Every later record is one event with its
// time (milliseconds after the first event, a float), its name and its
// data.
//
// Event names and data follow the QUIC event definitions of
// draft-ietf-quic-qlog-quic-events-05, whose category:event names
// ("transport:", "recovery:") qvis understands:
//
//   - transport:connection_state_updated {new}
//   - transport:packet_sent, transport:packet_received {header:
//     {packet_type, packet_number}, raw: {length}, frames}: packet_type is
//     the datagram's kind, packet_number its sequence number when the
//     protocol has one (a header field named seq, sequence,
//     sequence_number, packet_number, packet_seq or frame_seq), raw.length
//     the UDP payload size in bytes, and each frame an object with its
//     frame_type and the protocol's fields for it. The datagram's other
//     header fields go in rudp_header, a decoding fault in
//     rudp_decode_error.
//   - transport:packet_dropped {raw: {length}, trigger}: trigger is the
//     engine's error text.
//   - recovery:metrics_updated: min_rtt, smoothed_rtt and latest_rtt in
//     milliseconds (floats), congestion_window and bytes_in_flight in
//     bytes, pacing_rate in bits per second (left out when unpaced), as
//     §8.3.2 of the QUIC events draft gives them; rudp_rto (milliseconds)
//     and rudp_bandwidth (bits per second) add the controller's
//     retransmission timeout and bandwidth estimate.
//   - recovery:packet_lost {raw: {length}, trigger}: trigger is
//     "time_threshold", "timeout" or "nak" (trace.LossReason.String).
//   - recovery:congestion_state_updated {new}
//
// Events qlog has no name for are in the "rudp" category:
// rudp:packet_sent_cc {raw: {length}, retransmit} for a packet the
// congestion controller counts in flight, rudp:spurious_retransmit {},
// rudp:keepalive {}, rudp:peer_validated {} (a listener's peer proved
// its address), rudp:flow_blocked {unsent} (a stream waiting for
// the peer's flow-control window), rudp:challenge {kind, result} and
// rudp:connection_closed {error}, the error left out for an orderly
// close.
//
// # Opening a trace
//
// qvis (https://qvis.quictools.info) opens .sqlog files: load the file in
// its file manager, then use its sequence, congestion and packetization
// diagrams. Any JSON tool reads a record at a time once the 0x1E bytes
// are removed (jq --seq reads the file as it is). ReadEvents reads a
// trace back, and the command rudpcat plot draws throughput, congestion
// window and RTT over time from one.
//
// # QLOGDIR
//
// As quic-go does, a program may trace to files named after each conn by
// setting the environment variable QLOGDIR (EnvDir) and using FromEnv as
// its tracer factory:
//
//	cfg.Tracer = qlog.FromEnv() // nil, no tracing, when QLOGDIR is unset
//
// rudp.Config does this itself when its Tracer is nil.
//
// DirTracer writes one file per conn in a given directory.
//
// # Cost
//
// Each traced event takes a mutex, builds and marshals one small JSON
// object (a few allocations, more for a datagram with many frames) and
// copies it into a 32 KiB buffer; the file is written when the buffer
// fills and at the close. A transfer at full speed writes about 200 to
// 400 bytes of trace per datagram sent or received. A conn without a
// tracer pays nothing.
package qlog
