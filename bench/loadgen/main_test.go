//go:build linux

package main

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

func TestReplyLen(t *testing.T) {
	for _, c := range []struct {
		in    string
		n     int
		isErr bool
	}{
		{"+PONG\r\n", 7, false},
		{":12\r\n", 5, false},
		{"-ERR no\r\n", 9, true},
		{"$3\r\nabc\r\n", 9, false},
		{"$-1\r\n", 5, false},
		{"*5\r\n:0\r\n:100\r\n:99\r\n:-1\r\n:0\r\n", 28, false},
		{"*2\r\n:1\r\n-ERR x\r\n", 16, true},
		// Not whole yet: every proper prefix of a reply.
		{"+PONG\r", 0, false},
		{"$3\r\nab", 0, false},
		{"*5\r\n:0\r\n:100\r\n", 0, false},
	} {
		n, isErr, err := replyLen([]byte(c.in))
		if err != nil || n != c.n || isErr != c.isErr {
			t.Errorf("replyLen(%q) = %d, %v, %v; want %d, %v", c.in, n, isErr, err, c.n, c.isErr)
		}
	}
	if _, _, err := replyLen([]byte("?\r\n")); err == nil {
		t.Error("an unknown reply type is not an error")
	}
}

// run drives every connection at its rate and times every request: against
// a server that answers each command after a fixed delay, each latency is
// at least that delay, and every request is answered once, one at a time
// or in batches.
func TestRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const delay = 2 * time.Millisecond
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				rd := bufio.NewReader(nc)
				for {
					line, err := rd.ReadString('\n')
					if err != nil {
						return
					}
					if !strings.HasPrefix(line, "*") {
						continue // an argument's line
					}
					// Reply once the command's 2 arguments (4 lines) are in.
					for range 4 {
						if _, err := rd.ReadString('\n'); err != nil {
							return
						}
					}
					time.Sleep(delay)
					if _, err := nc.Write([]byte("-ERR x\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	// Pipeline 4: batches of four every 16 ms a connection, each request
	// timed from its batch's instant; the server answers them one by one.
	for _, pipeline := range []int{1, 4} {
		lat, errs, elapsed, err := run(ln.Addr().String(), 1000, 4, pipeline, 300*time.Millisecond, []string{"GET", "{k}"}, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := 4 * int(300*time.Millisecond/(time.Duration(4*pipeline)*time.Millisecond)) * pipeline
		if len(lat) != want || errs != want {
			t.Fatalf("pipeline %d: %d latencies, %d errors; want %d of each", pipeline, len(lat), errs, want)
		}
		for _, l := range lat {
			if time.Duration(l) < delay {
				t.Fatalf("pipeline %d: a latency of %v, under the server's delay of %v", pipeline, time.Duration(l), delay)
			}
		}
		if elapsed < 285*time.Millisecond {
			t.Errorf("pipeline %d: %d requests at 1000/s took %v", pipeline, want, elapsed)
		}
	}
}
