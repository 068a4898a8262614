package region

import (
	"bufio"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/policy"
)

// readCommand reads one RESP array of bulk strings.
func readCommand(rd *bufio.Reader) ([]string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		if line, err = rd.ReadString('\n'); err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil {
			return nil, err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

// TestLinkPipelinesPushes: a peer that answers nothing until it has
// received three pushes gets them, one per interval: the link does not
// wait for an answer before sending the next batch (a wide-area round trip
// would otherwise add to every slot's lag), and the answers, when they
// come, keep the link up.
func TestLinkPipelinesPushes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []string, 16)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		rd := bufio.NewReader(c)
		held := 0
		for {
			args, err := readCommand(rd)
			if err != nil {
				return
			}
			got <- args
			if held++; held == 3 {
				c.Write([]byte(":0\r\n:0\r\n:0\r\n"))
			} else if held > 3 {
				c.Write([]byte(":0\r\n"))
			}
		}
	}()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := policy.NewStore(log.New(io.Discard, "", 0))
	r := New(Options{Name: "eu", Peers: []Peer{{"us", ln.Addr().String()}}, Clock: clk, Logger: log.New(io.Discard, "", 0),
		Interval: func() time.Duration { return 50 * time.Millisecond }, Timeout: func() time.Duration { return time.Minute },
		OnPartition: func() string { return KeepLast }}, s)
	done := make(chan struct{})
	defer close(done)
	go r.Run(done)
	deadline := time.Now().Add(30 * time.Second)
	for pushes := 0; pushes < 5; {
		select {
		case args := <-got:
			if args[0] != "RGN.PUSH" || args[1] != "eu" {
				t.Fatalf("push %d: %q", pushes, args)
			}
			pushes++
		case <-time.After(time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatalf("%d pushes received, want 5: the link waits for answers", pushes)
			}
			clk.Advance(10 * time.Millisecond)
		}
	}
	if !r.peers[0].linkUp.Load() {
		t.Fatalf("link down after the answers: %v", *r.peers[0].linkErr.Load())
	}
}

// TestLinkErrorAnswerResendsTheFullState: a push answered with an error
// closes the link; the next connection's first push is the full state, so
// the peer still gets the slot it refused.
func TestLinkErrorAnswerResendsTheFullState(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type push struct {
		conn int
		args []string
	}
	got := make(chan push, 64)
	go func() {
		for n := 1; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(n int, c net.Conn) {
				defer c.Close()
				rd := bufio.NewReader(c)
				for {
					args, err := readCommand(rd)
					if err != nil {
						return
					}
					got <- push{n, args}
					if n == 1 {
						c.Write([]byte("-NOPERM this user has no permissions to run the 'rgn.push' command\r\n"))
					} else {
						c.Write([]byte(":1\r\n"))
					}
				}
			}(n, c)
		}
	}()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := policy.NewStore(log.New(io.Discard, "", 0))
	if err := s.Set(policy.Policy{Name: "g", Algorithm: policy.FixedWindow, Limit: 10, Period: time.Minute, Global: true}); err != nil {
		t.Fatal(err)
	}
	r := New(Options{Name: "eu", Peers: []Peer{{"us", ln.Addr().String()}}, Clock: clk, Logger: log.New(io.Discard, "", 0),
		Interval: func() time.Duration { return 50 * time.Millisecond }, Timeout: func() time.Duration { return time.Minute },
		OnPartition: func() string { return KeepLast }}, s)
	s.SetPeers(r)
	e := engine.New(clk, 0)
	if _, err := s.Hit(e, []byte("g"), []byte("k"), clk.Now(), 1); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	go r.Run(done)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case p := <-got:
			if p.conn == 1 {
				continue
			}
			if len(p.args) != 6 || p.args[3] != "rl:g:k" || p.args[5] != "1" {
				t.Fatalf("the new link's first push: %q, want the full state (rl:g:k's slot)", p.args)
			}
			return
		case <-time.After(time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no second connection after the error answer")
			}
			clk.Advance(10 * time.Millisecond)
		}
	}
}
