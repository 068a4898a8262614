package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestClientKillIsDoneWhenAnswered: once CLIENT KILL has answered, the
// victim runs nothing more. Each trial kills a fresh connection and at
// once sends it a command; in 300 trials none may run (Redis: none).
func TestClientKillIsDoneWhenAnswered(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	dial := func() (net.Conn, *bufio.Reader) {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		return nc, bufio.NewReader(nc)
	}
	line := func(rd *bufio.Reader) string {
		l, _ := rd.ReadString('\n')
		return strings.TrimRight(l, "\r\n")
	}
	killer, kr := dial()
	defer killer.Close()
	for i := 0; i < 300; i++ {
		victim, vr := dial()
		io.WriteString(victim, "CLIENT ID\r\n")
		id := strings.TrimPrefix(line(vr), ":")
		fmt.Fprintf(killer, "CLIENT KILL ID %s\r\n", id)
		if got := line(kr); got != ":1" {
			t.Fatalf("trial %d: CLIENT KILL ID %s answered %q", i, id, got)
		}
		io.WriteString(victim, "INCR served\r\n")
		if got := line(vr); got != "" {
			t.Fatalf("trial %d: the killed client was served: %q", i, got)
		}
		victim.Close()
	}
	io.WriteString(killer, "GET served\r\n")
	if got := line(kr); got != "$-1" {
		t.Fatalf("GET served = %q: a killed client's INCR ran", got)
	}
}
