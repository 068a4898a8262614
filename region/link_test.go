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
