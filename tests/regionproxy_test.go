package tests

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
)

// delayProxy forwards TCP connections to a target, holding every chunk
// for a one-way delay on the fake clock (the wide-area link between two
// regions: netem is not available here), and can cut the link: a
// partitioned proxy closes its connections and refuses new ones.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
	clk    *clock.Fake

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func newDelayProxy(t *testing.T, clk *clock.Fake, target string, delay time.Duration) *delayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{ln: ln, target: target, delay: delay, clk: clk}
	t.Cleanup(func() { ln.Close(); p.partition(true) })
	go p.accept()
	return p
}

func (p *delayProxy) addr() string { return p.ln.Addr().String() }

func (p *delayProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// pipe copies src to dst, each chunk delivered delay after it was read.
func (p *delayProxy) pipe(src, dst net.Conn) {
	type chunk struct {
		b   []byte
		due <-chan time.Time
	}
	q := make(chan chunk, 4096)
	go func() {
		for ch := range q {
			<-ch.due
			if _, err := dst.Write(ch.b); err != nil {
				src.Close()
				return
			}
		}
	}()
	defer close(q)
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{append([]byte(nil), buf[:n]...), p.clk.After(p.delay)}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// partition cuts (true) or heals (false) the link.
func (p *delayProxy) partition(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}
