package rudp

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/rudpkit/rudp/internal/avara"
	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
)

// Limits and defaults of the Avara Config fields.
const (
	// MaxAvaraPassword is the longest Config.AvaraPassword, in bytes: the
	// login carries it as a Pascal string, after a length byte.
	MaxAvaraPassword = 255
	// MaxAvaraCram is the highest Config.AvaraCram.
	MaxAvaraCram = 3
	// AvaraReferenceSkipAfter is the reference receiver's skip threshold
	// at its default 16 ms frame time (Config.AvaraSkipAfter).
	AvaraReferenceSkipAfter = 16
	// DefaultAvaraVersion is the default Config.AvaraVersion: the network
	// version of avaraline/Avara at commit aaa5e63.
	DefaultAvaraVersion = 18
	// MaxAvaraClients is how many clients an Avara MessageListener serves
	// at once: player ids 1 to 7, the server being 0.
	MaxAvaraClients = 7
)

// AvaraPeer is one entry of an Avara server's connection table: a
// player id (1..7) and the address the server sees the player at.
type AvaraPeer struct {
	ID   int8
	Addr netip.AddrPort
}

// errAvaraFull refuses an eighth client at an Avara message listener.
var errAvaraFull = errors.New("rudp: avara: all 7 player ids in use")

// newAvara builds an Avara session. Message conns keep the reference's
// timing (resends after its estimate, acknowledgements after 41 ms, the
// 120 s dead timeout); streams time resends from the acks and
// acknowledge within avaraStreamAckDelay. A listener's message conn takes
// its player id from the listener's table of clients (Config.room).
func (c *Config) newAvara(now time.Time, peer net.Addr, log *slog.Logger, stream, accept bool) (engine.Engine, error) {
	cram := int8(c.AvaraCram)
	if c.AvaraCram < 0 {
		cram = -1 // avara.Config: −1 for level 0
	}
	cfg := avara.Config{
		Client:      !accept,
		Accept:      accept,
		ClientID:    avaraStreamClientID,
		Password:    []byte(c.AvaraPassword),
		Version:     c.AvaraVersion,
		Cram:        cram,
		MaxDatagram: min(c.MTU, avara.MaxDatagram),
		// The conn's own timer ends the handshake at
		// Config.HandshakeTimeout, saying what was tried.
		HandshakeTimeout: -1,
		Linger:           c.Linger,
		Congestion:       congestion.Algorithm(c.Congestion),
		Logger:           log,
	}
	if !stream {
		// A message conn may talk to the reference: it paces, bounds its
		// messages outstanding and acknowledges as the reference takes
		// it (avara.Config.ReferencePeer).
		cfg.SkipAfter = c.AvaraSkipAfter
		cfg.ReferencePeer = true
	}
	if stream {
		cfg.MaxDatagram -= sealLen
		cfg.AckRTT = true
		cfg.AckDelay = avaraStreamAckDelay
		cfg.LoginPad = avaraStreamLoginPad
		// A peer is given up when data waits unacknowledged, or nothing
		// arrives, for IdleTimeout; the engine's keepalive Pings (which
		// the stream ignores) keep an idle stream's peers hearing from
		// each other.
		cfg.DeadTimeout = c.IdleTimeout
		cfg.IdleTimeout = c.IdleTimeout
		cfg.KeepAlive = c.streamKeepAlive(accept)
		cfg.ChallengeClose = true // a Logout from the peer's address may be spoofed
	}
	if !accept {
		cfg.Seed = int32(c.random64())
	}
	room := c.room
	if !accept || stream || room == nil {
		return avara.New(now, cfg)
	}
	id, ok := room.reserve(addrPortOf(peer))
	if !ok {
		return nil, errAvaraFull
	}
	cfg.ClientID = id
	cfg.Table = func() avara.TOC { return room.sent(id) }
	s, err := avara.New(now, cfg)
	if err != nil {
		room.release(id)
		return nil, err
	}
	return s, nil
}

// avaraRoom is an Avara message listener's table of clients: it hands
// out player ids 1..7 and, whenever a client joins or leaves, sends every
// other client the new table (the TOC), as the reference server does.
// Lock order: a conn's a.mu, then mu.
type avaraRoom struct {
	mu      sync.Mutex
	slots   [avara.MaxClients]avaraSlot
	running bool // refresh runs
}

// avaraSlot is one player id of a room.
type avaraSlot struct {
	used   bool
	addr   netip.AddrPort
	joined bool         // its login was accepted: it is in the table
	conn   *MessageConn // once the listener made the conn
	toc    avara.TOC    // the table last sent to the client
}

// reserve takes the lowest free player id for a client at addr, false
// when all 7 are used.
func (r *avaraRoom) reserve(addr netip.AddrPort) (int8, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.slots {
		if !r.slots[i].used {
			r.slots[i] = avaraSlot{used: true, addr: addr}
			return int8(i + 1), true
		}
	}
	return 0, false
}

// release frees id, whose client never became a conn (its login was
// refused), without telling the others: it never was in the table.
func (r *avaraRoom) release(id int8) {
	r.mu.Lock()
	r.slots[id-1] = avaraSlot{}
	r.mu.Unlock()
}

// join records c as the conn of id, whose login was accepted (and which
// was sent the table); the others get the new table.
func (r *avaraRoom) join(id int8, c *MessageConn) {
	r.mu.Lock()
	r.slots[id-1].conn = c
	r.kickLocked()
	r.mu.Unlock()
}

// leave frees id, whose conn ended; the others get the new table.
func (r *avaraRoom) leave(id int8) {
	r.mu.Lock()
	r.slots[id-1] = avaraSlot{}
	r.kickLocked()
	r.mu.Unlock()
}

// sent joins id to the table and returns the table, recorded as sent to
// id: the session of id calls it when it accepts the login.
func (r *avaraRoom) sent(id int8) avara.TOC {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.slots[id-1].joined = true
	t := r.tableLocked()
	r.slots[id-1].toc = t
	return t
}

// tableLocked returns the table: the address of every player id in use.
func (r *avaraRoom) tableLocked() avara.TOC {
	var t avara.TOC
	for i, s := range r.slots {
		if s.joined {
			t[i] = s.addr
		}
	}
	return t
}

// kickLocked starts refresh unless it runs: one goroutine at most.
func (r *avaraRoom) kickLocked() {
	if !r.running {
		r.running = true
		go r.refresh()
	}
}

// refresh sends the table to each client whose last table differs, one
// at a time and without holding mu (sending takes the conn's a.mu),
// until every client has the current one.
func (r *avaraRoom) refresh() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		t := r.tableLocked()
		i := 0
		for i < len(r.slots) && (r.slots[i].conn == nil || r.slots[i].toc == t) {
			i++
		}
		if i == len(r.slots) {
			r.running = false
			return
		}
		c := r.slots[i].conn
		r.slots[i].toc = t
		r.mu.Unlock()
		c.sendTOC(t) // a conn that ended meanwhile sends nothing
		r.mu.Lock()
	}
}

// peers returns the table as AvaraPeers.
func (r *avaraRoom) peers() []AvaraPeer {
	r.mu.Lock()
	t := r.tableLocked()
	r.mu.Unlock()
	return peersOf(t)
}

// peersOf lists the used entries of t.
func peersOf(t avara.TOC) []AvaraPeer {
	var ps []AvaraPeer
	for i, a := range t {
		if a.IsValid() {
			ps = append(ps, AvaraPeer{ID: int8(i + 1), Addr: a})
		}
	}
	return ps
}

// addrPortOf returns a UDP address as a netip.AddrPort (the zero one for
// other kinds of address).
func addrPortOf(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	return netip.AddrPort{}
}

// sendTOC queues table t to the client of this listener's conn.
func (c *MessageConn) sendTOC(t avara.TOC) {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	s, ok := c.a.eng.(*avara.Session)
	if !ok || c.a.over || s.SendTOC(t) != nil {
		return
	}
	c.a.settleLocked(time.Now())
}

// AvaraPeers returns the Avara connection table, each player with the
// address the server sees it at. On a dialed conn it is the table of the
// server's latest TOC (nil before the login was accepted), this client
// included (see AvaraClientID); on a conn of a MessageListener, the
// listener's current table of clients. Opening direct conns to the
// players listed, as the reference's clients do for the game's
// peer-to-peer traffic, is the caller's choice: this package relays
// nothing between clients and has no client-to-client mode. Only IPv4
// addresses fit the table; others are left out. Nil on other protocols.
func (c *MessageConn) AvaraPeers() []AvaraPeer {
	if c.a == nil || c.cfg.Protocol != Avara {
		return nil
	}
	if c.room != nil {
		return c.room.peers()
	}
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	t, _ := c.a.eng.(*avara.Session).Table()
	return peersOf(t)
}

// AvaraClientID returns the player id (1..7) of the client end of the
// conn: on a dialed conn this end's id, given by the server's TOC; on a
// conn of a MessageListener the peer's. It is 0 on other protocols and
// before the login was accepted.
func (c *MessageConn) AvaraClientID() int8 {
	if c.a == nil || c.cfg.Protocol != Avara {
		return 0
	}
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	s := c.a.eng.(*avara.Session)
	if c.room != nil {
		return s.PeerID()
	}
	return max(s.ID(), 0)
}

// dropEngine frees what newEngine reserved for eng, a listener's engine
// that refused the datagram it was built for and is discarded.
func (c *Config) dropEngine(eng engine.Engine) {
	if s, ok := eng.(*avara.Session); ok && c.room != nil {
		c.room.release(s.PeerID())
	}
}
