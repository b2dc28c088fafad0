package avara

import (
	"cmp"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// errRoomFull refuses an eighth client at a listener.
var errRoomFull = errors.New("rudp: avara: all 7 player ids in use")

// Room is a listener's table of clients (its engine.Roster): it hands
// out player ids 1..7 and, whenever a client joins or leaves, sends every
// other client the new table (the TOC), as the reference server does.
//
// Unlike the reference, which gives a slot and lists the address in the
// table as soon as a Login arrives, a client takes a slot only once it
// is validated: it acknowledged its first TOC (Config.Join), which only
// the owner of the address receives. Until then it is a login: its TOC
// gives it a provisional id, the lowest one that no validated client
// holds and, if there is one, that no other login holds either, and
// lists the validated clients and itself only. Logins are not counted
// among the 7 (a full room refuses new ones, silently as the reference);
// they are bounded by the listener's backlog, as every half-open conn.
// At validation the provisional id is kept if still free, else the
// lowest free id is given in a new TOC (the reference client takes a
// later TOC's id as its own, CUDPComm::ReadFromTOC), and refused when
// none is left. So spoofed logins take no slot and are listed to no one.
// Lock order: a conn's lock (RosterConn.Locked), then mu.
type Room struct {
	mu      sync.Mutex
	slots   [MaxClients]slot
	logins  []*login // not yet validated
	running bool     // refresh runs
}

// slot is the player id of a validated client.
type slot struct {
	used bool
	addr netip.AddrPort
	conn engine.RosterConn
	sess *Session
	toc  TOC // the table last sent to the client
}

// login is a client whose login was taken and which has not yet
// acknowledged its TOC.
type login struct {
	id   int8 // provisional
	addr netip.AddrPort
	sess *Session
	conn engine.RosterConn // once the listener made the conn
	toc  TOC               // the table its first TOC carried
}

var _ engine.Roster = (*Room)(nil)

// newSession builds the session of a client logging in from addr, with
// a provisional id; it fails when 7 validated clients hold every id.
func (r *Room) newSession(now time.Time, addr netip.AddrPort, cfg Config) (*Session, error) {
	lg, ok := r.login(addr)
	if !ok {
		return nil, errRoomFull
	}
	cfg.ClientID = lg.id
	cfg.Table = func() TOC { return r.loginTable(lg) }
	cfg.Join = func() (int8, TOC, bool) { return r.claim(lg) }
	// The session ends an unacknowledged login after
	// DefaultServerHandshakeTimeout (4 s): the reference client gives up
	// 3 s after its Login, and 1 s more covers the round trip of a TOC
	// sent just before that.
	cfg.HandshakeTimeout = 0
	s, err := New(now, cfg)
	if err != nil {
		r.forget(func(l *login) bool { return l == lg })
		return nil, err
	}
	lg.sess = s
	return s, nil
}

// login records a client logging in from addr with a provisional id,
// false when 7 validated clients hold every id.
func (r *Room) login(addr netip.AddrPort) (*login, bool) {
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
		if !slices.ContainsFunc(r.logins, func(l *login) bool { return l.id == id }) {
			unshared = id
		}
	}
	if free == 0 {
		return nil, false
	}
	lg := &login{id: cmp.Or(unshared, free), addr: addr}
	r.logins = append(r.logins, lg)
	return lg, true
}

// forget forgets the logins del picks.
func (r *Room) forget(del func(*login) bool) {
	r.mu.Lock()
	r.logins = slices.DeleteFunc(r.logins, del)
	r.mu.Unlock()
}

// Drop implements engine.Roster: it forgets the login of e's session.
func (r *Room) Drop(e engine.Engine) {
	r.forget(func(l *login) bool { return engine.Engine(l.sess) == e })
}

// sweepLocked forgets the logins and frees the slots whose conns ended,
// and reports whether a slot was freed.
func (r *Room) sweepLocked() bool {
	r.logins = slices.DeleteFunc(r.logins, func(l *login) bool { return l.conn != nil && l.conn.Ended() })
	freed := false
	for i := range r.slots {
		if c := r.slots[i].conn; c != nil && c.Ended() {
			r.slots[i] = slot{}
			freed = true
		}
	}
	return freed
}

// Join implements engine.Roster: c is the conn of e's login (the listener
// made it after the session took the Login); the validated ones get
// tables through it.
func (r *Room) Join(e engine.Engine, c engine.RosterConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.logins {
		if l.conn == nil && engine.Engine(l.sess) == e {
			l.conn = c
			return
		}
	}
}

// Leave implements engine.Roster: a conn ended; its login is forgotten
// or its slot freed, and the others get the new table.
func (r *Room) Leave() {
	r.mu.Lock()
	if r.sweepLocked() {
		r.kickLocked()
	}
	r.mu.Unlock()
}

// loginTable returns the table for lg's first TOC: the validated clients
// and lg itself at its provisional id.
func (r *Room) loginTable(lg *login) TOC {
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
func (r *Room) claim(lg *login) (int8, TOC, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logins = slices.DeleteFunc(r.logins, func(l *login) bool { return l == lg })
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
		return 0, TOC{}, false
	}
	r.slots[id-1] = slot{used: true, addr: lg.addr, conn: lg.conn, sess: lg.sess, toc: lg.toc}
	t := r.tableLocked()
	if id != lg.id {
		r.slots[id-1].toc = t // sent by the session with the new id
	}
	r.kickLocked()
	return id, t, true
}

// tableLocked returns the table: the address of every validated client.
func (r *Room) tableLocked() TOC {
	var t TOC
	for i, s := range r.slots {
		if s.used {
			t[i] = s.addr
		}
	}
	return t
}

// kickLocked starts refresh unless it runs: one goroutine at most.
func (r *Room) kickLocked() {
	if !r.running {
		r.running = true
		go r.refresh()
	}
}

// refresh sends the table to each client whose last table differs, one
// at a time and without holding mu (sending takes the conn's lock),
// until every client has the current one.
func (r *Room) refresh() {
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
		c, s := r.slots[i].conn, r.slots[i].sess
		r.slots[i].toc = t
		r.mu.Unlock()
		c.Locked(func() { _ = s.SendTOC(t) }) // a conn that ended meanwhile sends nothing
		r.mu.Lock()
	}
}

// Table returns the current table of validated clients.
func (r *Room) Table() TOC {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tableLocked()
}
