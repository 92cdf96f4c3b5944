// Package l4proxy is a round-robin TCP proxy in front of several webhook
// replicas, standing in for a Service's virtual IP in tests and benchmarks
// that run replicas as the chart does.
package l4proxy

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// RoundRobin is an L4 TCP proxy in front of several webhook replicas, as a
// Service's virtual IP is: each new connection goes to the next backend,
// and TLS passes through untouched (the API server's client certificate
// reaches the replica). The API server keeps its connection to a webhook
// open (HTTP/2), so on its own every call would reach one replica; rotate
// closes the idle connections so the next call dials again, and reaches
// the next replica.
type RoundRobin struct {
	l        net.Listener
	backends []string

	mu      sync.Mutex
	serving bool
	next    int
	conns   map[net.Conn]struct{}
	// dialed counts the connections each backend was given.
	dialed []int
}

// Listen listens on a free port of 127.0.0.1; serve starts
// forwarding once the backends are known.
func Listen(t *testing.T) *RoundRobin {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("unable to listen for the replicas' proxy: %v", err)
	}
	p := &RoundRobin{l: l, conns: map[net.Conn]struct{}{}}
	t.Cleanup(p.close)
	return p
}

// Port is the port the proxy listens on (the one the webhook
// configurations name).
func (p *RoundRobin) Port() int { return p.l.Addr().(*net.TCPAddr).Port }

// Serve forwards each accepted connection to the next of backends. A later
// call replaces the backends (for replicas started again).
func (p *RoundRobin) Serve(backends []string) {
	p.mu.Lock()
	p.backends, p.dialed = backends, make([]int, len(backends))
	started := p.serving
	p.serving = true
	p.mu.Unlock()
	if started {
		return
	}
	go func() {
		for {
			in, err := p.l.Accept()
			if err != nil {
				return
			}
			go p.forward(in)
		}
	}()
}

func (p *RoundRobin) forward(in net.Conn) {
	p.mu.Lock()
	i := p.next % len(p.backends)
	p.next++
	p.dialed[i]++
	backend := p.backends[i]
	p.mu.Unlock()
	out, err := net.DialTimeout("tcp", backend, 10*time.Second)
	if err != nil {
		in.Close()
		return
	}
	p.track(in, true)
	p.track(out, true)
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// Half-close where the connection allows it, so the other
		// direction drains; close both once both are done.
		if tcp, ok := dst.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
	}
	wg.Add(2)
	go pipe(out, in)
	go pipe(in, out)
	wg.Wait()
	in.Close()
	out.Close()
	p.track(in, false)
	p.track(out, false)
}

func (p *RoundRobin) track(c net.Conn, open bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if open {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

// Rotate closes every open connection, so the API server's next webhook
// call dials again and reaches the next replica. Call it only between
// calls the test makes one after another (no webhook call in flight), and
// it waits a moment for the API server to see the connection gone. A nil
// proxy (one replica) has nothing to rotate.
func (p *RoundRobin) Rotate() {
	if p == nil {
		return
	}
	p.mu.Lock()
	n := len(p.conns)
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	if n > 0 {
		time.Sleep(100 * time.Millisecond)
	}
}

// Served is how many connections each replica was given.
func (p *RoundRobin) Served() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.dialed...)
}

func (p *RoundRobin) close() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}
