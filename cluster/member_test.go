package cluster

import (
	"bufio"
	"io"
	"log"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
)

// TestMemberCallLogsInThenSends: a call to another member's client port
// is AUTH with masteruser and masterauth, then the command, each an array
// of bulk strings, and the command's reply comes back.
func TestMemberCallLogsInThenSends(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const (
		auth = "*3\r\n$4\r\nAUTH\r\n$4\r\nrepl\r\n$6\r\nsecret\r\n"
		cmd  = "*3\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n$0\r\n\r\n"
	)
	got := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer conn.Close()
		buf := make([]byte, len(auth)+len(cmd))
		_, err = io.ReadFull(bufio.NewReader(conn), buf)
		conn.Write([]byte("+OK\r\n$5\r\nhello\r\n"))
		got <- string(buf)
	}()
	m := &Member{cfg: MemberConfig{Config: Config{NodeTimeout: 5 * time.Second}, Auth: func() (string, string) { return "repl", "secret" }}}
	r, body, err := m.read(ln.Addr().String(), "INFO", "replication", "")
	if err != nil || r.IsError() || string(body) != "hello" {
		t.Fatalf("read = %+v, %q, %v", r, body, err)
	}
	if sent := <-got; sent != auth+cmd {
		t.Fatalf("sent %q, want %q", sent, auth+cmd)
	}
}

// TestMemberFollowsItsTopology: Follow is handed the topologies the member
// applies.
func TestMemberFollowsItsTopology(t *testing.T) {
	t.Parallel()
	bus := freePort(t)
	var mu sync.Mutex
	var seen []*Topology
	m, err := StartMember(MemberConfig{
		Config: Config{
			Self:        Node{ID: nodeID('a'), Shard: nodeID('a'), IP: "127.0.0.1", Port: bus - 10000, BusPort: bus},
			NodeTimeout: 500 * time.Millisecond,
			Logger:      log.New(io.Discard, "", 0),
			Clock:       clock.Real(), // raft runs on the system clock: its members' waits must too
		},
		Follow: func(t *Topology) {
			mu.Lock()
			seen = append(seen, t)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	last := func() *Topology {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return nil
		}
		return seen[len(seen)-1]
	}
	eventually(t, "a topology holding this node", func() bool {
		top := last()
		if top == nil {
			return false
		}
		_, ok := top.Node(nodeID('a'))
		return ok
	})
	if _, err := m.Consensus().Propose(Change{Op: OpAddSlots, ID: nodeID('a'), Slots: []Range{{0, 16383}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slots followed", func() bool { return len(last().SlotsOf(nodeID('a'))) == 1 })
	m.Close() // returns once the goroutine that calls Follow has stopped
}
