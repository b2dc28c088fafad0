package rudp

import (
	"cmp"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
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
func (c *Config) newAvara(now time.Time, peer net.Addr, log *slog.Logger, tr *connTrace, stream, accept bool) (engine.Engine, error) {
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
		Tracer:           tr.tracer(),
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
		// A peer is given up when data waits unacknowledged, or nothing
		// arrives, for IdleTimeout; the engine's keepalive Pings (which
		// the stream ignores) keep an idle stream's peers hearing from
		// each other.
		cfg.DeadTimeout = c.IdleTimeout
		cfg.IdleTimeout = c.IdleTimeout
		cfg.KeepAlive = c.streamKeepAlive(accept)
		cfg.ChallengeClose = true // a Logout from the peer's address may be spoofed
		// The peer runs this package: take only what it can send
		// (a forged message or acknowledgement ends the stream with an
		// error instead of stalling or corrupting it).
		cfg.ReliablePeer = true
	}
	if !accept {
		cfg.Seed = int32(c.random64())
		// The Login is padded so that the listener's TOC fits what it
		// may send an address not yet validated (3 times what it
		// received): a rudp listener answers at once instead of at the
		// Login's resend, 2 s later. The reference server compares the
		// password's Pascal string alone and ignores what follows
		// (avaraline/Avara aaa5e63, src/net/CUDPComm.cpp,
		// CUDPComm::DoLogin).
		cfg.LoginPad = avaraLoginPad
	}
	room := c.room
	if !accept || stream || room == nil {
		return avara.New(now, cfg)
	}
	// A listener's message conn: the client is validated (it
	// acknowledged its TOC) before it takes a player id for good and is
	// listed to the others (avaraRoom).
	lg, ok := room.login(addrPortOf(peer))
	if !ok {
		return nil, errAvaraFull
	}
	cfg.ClientID = lg.id
	cfg.Table = func() avara.TOC { return room.loginTable(lg) }
	cfg.Join = func() (int8, avara.TOC, bool) { return room.claim(lg) }
	// The engine ends an unacknowledged login after
	// avara.DefaultServerHandshakeTimeout (4 s): the reference client
	// gives up 3 s after its Login, and 1 s more covers the round trip of
	// a TOC sent just before that.
	cfg.HandshakeTimeout = 0
	s, err := avara.New(now, cfg)
	if err != nil {
		room.forget(lg)
		return nil, err
	}
	lg.sess = s
	return s, nil
}

// avaraRoom is an Avara message listener's table of clients: it hands
// out player ids 1..7 and, whenever a client joins or leaves, sends every
// other client the new table (the TOC), as the reference server does.
//
// Unlike the reference, which gives a slot and lists the address in the
// table as soon as a Login arrives, a client takes a slot only once it
// is validated: it acknowledged its first TOC (avara.Config.Join), which
// only the owner of the address receives. Until then it is a login: its
// TOC gives it a provisional id, the lowest one that no validated client
// holds and, if there is one, that no other login holds either, and
// lists the validated clients and itself only. Logins are not counted
// among the 7 (a full room refuses new ones, silently as the reference);
// they are bounded by the listener's backlog, as every half-open conn.
// At validation the provisional id is kept if still free, else the
// lowest free id is given in a new TOC (the reference client takes a
// later TOC's id as its own, CUDPComm::ReadFromTOC), and refused when
// none is left. So spoofed logins take no slot and are listed to no one.
// Lock order: a conn's a.mu, then mu.
type avaraRoom struct {
	mu      sync.Mutex
	slots   [avara.MaxClients]avaraSlot
	logins  []*avaraLogin // not yet validated
	running bool          // refresh runs
}

// avaraSlot is the player id of a validated client.
type avaraSlot struct {
	used bool
	addr netip.AddrPort
	conn *MessageConn
	toc  avara.TOC // the table last sent to the client
}

// avaraLogin is a client whose login was taken and which has not yet
// acknowledged its TOC.
type avaraLogin struct {
	id   int8 // provisional
	addr netip.AddrPort
	sess *avara.Session
	conn *MessageConn // once the listener made the conn
	toc  avara.TOC    // the table its first TOC carried
}

// login records a client logging in from addr with a provisional id,
// false when 7 validated clients hold every id.
func (r *avaraRoom) login(addr netip.AddrPort) (*avaraLogin, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked()
	free, unshared := int8(0), int8(0)
	for i := len(r.slots) - 1; i >= 0; i-- {
		id := int8(i + 1)
		if r.slots[i].used {
			continue
		}
		free = id
		if !slices.ContainsFunc(r.logins, func(l *avaraLogin) bool { return l.id == id }) {
			unshared = id
		}
	}
	if free == 0 {
		return nil, false
	}
	lg := &avaraLogin{id: cmp.Or(unshared, free), addr: addr}
	r.logins = append(r.logins, lg)
	return lg, true
}

// drop forgets the login of session s, which refused the datagram it was
// built for: the listener discards it.
func (r *avaraRoom) drop(s *avara.Session) {
	r.mu.Lock()
	r.logins = slices.DeleteFunc(r.logins, func(l *avaraLogin) bool { return l.sess == s })
	r.mu.Unlock()
}

// forget forgets lg, whose session could not be made.
func (r *avaraRoom) forget(lg *avaraLogin) {
	r.mu.Lock()
	r.logins = slices.DeleteFunc(r.logins, func(l *avaraLogin) bool { return l == lg })
	r.mu.Unlock()
}

// endedConn reports whether c's association has ended (see connBase.finish).
func (c *MessageConn) endedConn() bool { return c.done.Load() == closedChan }

// sweepLocked forgets the logins and frees the slots whose conns ended,
// and reports whether a slot was freed.
func (r *avaraRoom) sweepLocked() bool {
	r.logins = slices.DeleteFunc(r.logins, func(l *avaraLogin) bool { return l.conn != nil && l.conn.endedConn() })
	freed := false
	for i := range r.slots {
		if c := r.slots[i].conn; c != nil && c.endedConn() {
			r.slots[i] = avaraSlot{}
			freed = true
		}
	}
	return freed
}

// join records c as the conn of its login (the listener made it after
// the session took the Login): the validated ones get tables through it.
func (r *avaraRoom) join(c *MessageConn) {
	addr := addrPortOf(c.raddr)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.logins {
		if l.conn == nil && l.addr == addr {
			l.conn = c
			return
		}
	}
}

// leave is called when a conn of the listener ended: its login is
// forgotten or its slot freed, and the others get the new table.
func (r *avaraRoom) leave() {
	r.mu.Lock()
	if r.sweepLocked() {
		r.kickLocked()
	}
	r.mu.Unlock()
}

// loginTable returns the table for lg's first TOC: the validated clients
// and lg itself at its provisional id.
func (r *avaraRoom) loginTable(lg *avaraLogin) avara.TOC {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tableLocked()
	t[lg.id-1] = lg.addr
	lg.toc = t
	return t
}

// claim gives lg, validated, its slot: its provisional id if still free,
// else the lowest free one; false when none is left. It returns the id
// and the current table, and the others get the new table.
func (r *avaraRoom) claim(lg *avaraLogin) (int8, avara.TOC, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logins = slices.DeleteFunc(r.logins, func(l *avaraLogin) bool { return l == lg })
	id := lg.id
	if r.slots[id-1].used {
		id = 0
		for i := range r.slots {
			if !r.slots[i].used {
				id = int8(i + 1)
				break
			}
		}
	}
	if id == 0 || lg.conn == nil {
		return 0, avara.TOC{}, false
	}
	r.slots[id-1] = avaraSlot{used: true, addr: lg.addr, conn: lg.conn, toc: lg.toc}
	t := r.tableLocked()
	if id != lg.id {
		r.slots[id-1].toc = t // sent by the session with the new id
	}
	r.kickLocked()
	return id, t, true
}

// tableLocked returns the table: the address of every validated client.
func (r *avaraRoom) tableLocked() avara.TOC {
	var t avara.TOC
	for i, s := range r.slots {
		if s.used {
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
		c.room.drop(s)
	}
}
