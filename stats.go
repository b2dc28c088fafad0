package rudp

import "time"

// Stats are a conn's counters and round-trip estimates. Counters only grow.
type Stats struct {
	PacketsSent        uint64        // datagrams sent
	PacketsReceived    uint64        // datagrams accepted from the peer
	BytesSent          uint64        // bytes of the datagrams sent (UDP payload)
	BytesReceived      uint64        // bytes of the datagrams accepted
	PacketsRejected    uint64        // datagrams from the peer refused as malformed, out of range, or (streams) corrupted or under the plain seal after the key
	AmplificationDrops uint64        // datagrams not sent to a peer not yet validated, beyond 3 × what it sent
	SendErrors         uint64        // datagrams the socket refused to send (counted as lost)
	MessagesSent       uint64        // protocol messages sent for the first time
	MessagesRecv       uint64        // protocol messages delivered
	Retransmits        uint64        // messages sent again after a loss
	Duplicates         uint64        // duplicate datagrams or messages dropped
	PeerRestarts       uint64        // times the peer came back with a new session
	Expired            uint64        // unreliable messages dropped unsent after Config.MaxUnreliableDelay
	TooLarge           uint64        // messages from the peer dropped undelivered for exceeding Config.MaxMessage (POROUS); each is logged at Debug
	SRTT               time.Duration // smoothed round-trip time (RFC 6298)
	RTTVar             time.Duration // round-trip time variation
	RTO                time.Duration // current retransmission timeout

	// Refused counts the messages from the peer that a message conn
	// refused without acknowledging them, while its receive queue held
	// Config.MaxRecvBuffer bytes of messages or after Close. The peer sends them
	// again, and each arrival counts (POROUS counts the fragments and
	// sentinels of its packets).
	Refused uint64
	// Skipped counts the peer's messages an Avara message conn skipped
	// past for good under Config.AvaraSkipAfter: never delivered, each
	// logged at Debug.
	Skipped uint64
	// Unread counts the messages a message conn received and dropped
	// unread: those it held at Close (see MessageConn.Close), plus those
	// refused after Close (counted as in Refused).
	Unread uint64

	// The sender's congestion controller (zero where the protocol's
	// engine has none).
	Congestion       string        // controller and state, as "bbr/probe_bw" or "aimd/avoidance"
	Cwnd             int           // congestion window, bytes
	BytesInFlight    int           // bytes sent and neither acknowledged nor declared lost
	PacingRate       uint64        // bytes/s the sender paces at; 0 when unpaced
	DeliveryRate     uint64        // bytes/s: the bottleneck bandwidth estimate (BBR) or the latest delivery-rate sample
	MinRTT           time.Duration // smallest RTT seen (BBR: over the last 10 s)
	BytesLost        uint64        // bytes declared lost
	CongestionEvents uint64        // windows reduced because loss was congestion
	// LossRate is BytesLost over the bytes sent and either acknowledged or
	// declared lost, in [0, 1].
	LossRate float64
}

// statsOf reads an association's counters. Call with a.mu held.
func statsOf(a *assoc) Stats {
	s := a.eng.Stats()
	st := Stats{
		PacketsSent:        s.PacketsSent,
		PacketsReceived:    s.PacketsReceived,
		BytesSent:          s.BytesSent,
		BytesReceived:      s.BytesReceived,
		PacketsRejected:    s.PacketsRejected + a.badSeals + a.lateSeals,
		Refused:            s.Refused,
		Skipped:            s.Skipped,
		AmplificationDrops: a.ampDrops,
		SendErrors:         a.sendErrors,
		MessagesSent:       s.MessagesSent,
		MessagesRecv:       s.MessagesRecv,
		Retransmits:        s.Retransmits,
		Duplicates:         s.Duplicates,
		PeerRestarts:       s.PeerRestarts,
		Expired:            s.Expired,
		TooLarge:           s.TooLarge,
		SRTT:               s.SRTT,
		RTTVar:             s.RTTVar,
		RTO:                s.RTO,
	}
	if a.discarding {
		st.Unread = a.unread + s.Refused - a.refusedBase
	}
	if c := s.Congestion; c.State != "" {
		st.Congestion = c.Algorithm.String() + "/" + c.State
		st.Cwnd, st.BytesInFlight = c.Cwnd, c.InFlight
		st.PacingRate, st.DeliveryRate, st.MinRTT = c.Pacing, c.Bandwidth, c.MinRTT
		st.BytesLost, st.CongestionEvents, st.LossRate = c.Lost, c.Events, c.LossRate()
	}
	return st
}

// ListenerStats are a listener's counters for datagrams that reached no
// conn. Counters only grow.
type ListenerStats struct {
	// BacklogDrops counts openings from new peers dropped because
	// Config.Backlog peers were already there, at least half of them
	// waiting for Accept (the opener sends its opening again).
	BacklogDrops uint64
	// Evicted counts new peers dropped before they were validated (the
	// oldest in their handshake) to make room for a newer opening, when
	// such peers held more than half of Config.Backlog.
	Evicted uint64
	// UnknownDrops counts datagrams from addresses without a conn that do
	// not open one (not the protocol's opening, refused by a new engine,
	// or after Close).
	UnknownDrops uint64
	// Oversize counts datagrams dropped unread for their size: above 2048
	// bytes, except those of a POROUS stream's large frames (up to 64,471
	// bytes from a peer on a loopback address; see Streams on the wire in
	// the package documentation).
	Oversize uint64
}
