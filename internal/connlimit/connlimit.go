// Package connlimit caps the connections an HTTP server holds open at
// once, so that a flood of idle connections costs a bounded number of
// descriptors, goroutines and buffers instead of one of each per
// connection.
//
// Unlike a plain semaphore listener (x/net's netutil.LimitListener), a
// full Listener makes room for a new connection by closing the one that
// has waited longest without a request in progress (idle between
// keep-alive requests, or accepted and silent): clients that hold
// connections open delay no one. Only when every connection has a request
// in progress does Accept wait for one to end, leaving further clients in
// the kernel's listen backlog.
package connlimit

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Listener is a net.Listener that holds at most its cap of accepted
// connections open at once. Give its ConnState to the http.Server that
// serves it, so it knows which connections are between requests.
type Listener struct {
	net.Listener
	max int
	// grace is how long a new connection may stay silent before it counts
	// as idle: a client sends its request as soon as it connects (after
	// the TLS handshake), but the server reads it a moment later.
	grace time.Duration

	mu    sync.Mutex
	conns map[*conn]struct{}
	// freed gets a token when a connection closes, for an Accept waiting
	// for room.
	freed     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

// New caps inner at n open connections (n < 1 means 1).
func New(inner net.Listener, n int) *Listener {
	return &Listener{Listener: inner, max: max(n, 1), grace: newGrace, conns: map[*conn]struct{}{},
		freed: make(chan struct{}, 1), closed: make(chan struct{})}
}

// newGrace is Listener.grace: a few round trips and a TLS handshake on a
// busy CPU, far below any ReadHeaderTimeout.
const newGrace = 2 * time.Second

// Accept takes the next connection from the backlog and returns it once
// there is room for it: at once below the cap, else after closing the
// connection idle longest, else when one closes.
func (l *Listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		l.mu.Lock()
		if len(l.conns) < l.max {
			c := &conn{Conn: nc, l: l, state: http.StateNew, since: time.Now()}
			l.conns[c] = struct{}{}
			l.mu.Unlock()
			return c, nil
		}
		victim, wait := l.idlest(time.Now())
		l.mu.Unlock()
		if victim != nil {
			// The server's goroutine of victim sees its reads fail and ends.
			_ = victim.Close()
			continue
		}
		if !l.waitRoom(wait) {
			_ = nc.Close()
			return nil, net.ErrClosed
		}
	}
}

// waitRoom waits until a connection closes or, when wait > 0, for wait;
// false when the listener closed.
func (l *Listener) waitRoom(wait time.Duration) bool {
	var silent <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		silent = t.C
	}
	select {
	case <-l.freed:
	case <-silent:
	case <-l.closed:
		return false
	}
	return true
}

// idlest returns the connection that has waited longest without a request
// in progress: idle between requests, or silent since accepted for at
// least l.grace. Without one, wait > 0 is when the oldest new connection
// becomes one. l.mu is held.
func (l *Listener) idlest(now time.Time) (victim *conn, wait time.Duration) {
	for c := range l.conns {
		switch {
		case c.state == http.StateNew && now.Sub(c.since) < l.grace:
			if w := l.grace - now.Sub(c.since); wait == 0 || w < wait {
				wait = w
			}
			continue
		case c.state != http.StateIdle && c.state != http.StateNew:
			continue
		}
		if victim == nil || c.since.Before(victim.since) {
			victim = c
		}
	}
	return victim, wait
}

// ConnState records each connection's state; set it as the
// http.Server's ConnState. TLS connections are recognised through their
// NetConn.
func (l *Listener) ConnState(nc net.Conn, s http.ConnState) {
	for {
		if c, ok := nc.(*conn); ok {
			if c.l == l {
				l.mu.Lock()
				c.state, c.since = s, time.Now()
				l.mu.Unlock()
			}
			return
		}
		u, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			return
		}
		nc = u.NetConn()
	}
}

// Open returns the number of connections open now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Close stops Accept, including one waiting for room, and closes the
// inner listener; open connections are the server's to close.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// conn is an accepted connection that leaves its listener's count when
// closed.
type conn struct {
	net.Conn
	l    *Listener
	once sync.Once
	// state and since (when state began) are guarded by l.mu.
	state http.ConnState
	since time.Time
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		select {
		case c.l.freed <- struct{}{}:
		default:
		}
	})
	return err
}
