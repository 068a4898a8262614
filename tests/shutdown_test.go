package tests

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGracefulShutdown sends SIGTERM to the real binary while a client
// streams a long pipeline of INCRs: the server stops accepting, answers
// every command it has read, writes its snapshot and exits 0. After a
// restart from that snapshot the counter equals exactly the number of
// replies the client received: no executed command lost its reply, and no
// answered command lost its effect.
func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	p := mustStart(t, dir)
	nc, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const n = 50000
	go func() {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(cmd("INCR", "counter"))
		}
		io.WriteString(nc, b.String())
	}()
	rd := bufio.NewReader(nc)
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	replies := 0
	for {
		l, err := rd.ReadString('\n')
		if err != nil {
			break
		}
		replies++
		if l != ":"+strconv.Itoa(replies)+"\r\n" {
			t.Fatalf("reply %d = %q", replies, l)
		}
		if replies == 100 {
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, p.log)
	}
	t.Logf("the client got %d replies of %d commands before the server closed", replies, n)
	for _, want := range []string{"terminated received, shutting down", "no new connections, finishing in-flight commands", "limitdb stopped"} {
		if !strings.Contains(p.log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, p.log)
		}
	}
	if _, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		t.Error("still accepting after exit")
	}

	q := mustStart(t, dir)
	r := dialRaw(t, q.addr)
	r.send(cmd("GET", "counter"))
	r.mustLine()
	if got := r.mustLine(); got != strconv.Itoa(replies) {
		t.Errorf("counter after restart = %s, client saw %d replies", got, replies)
	}
	q.cmd.Process.Signal(syscall.SIGTERM)
	if code := q.wait(t); code != 0 {
		t.Errorf("second run exit code %d", code)
	}
}
