package tests

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGracefulShutdown sends SIGTERM to the real binary while a client
// streams a long pipeline of INCRs: the server stops accepting, answers
// every command it has read, writes its snapshot and exits 0. After a
// restart from that snapshot the counter equals exactly the number of
// replies the client received: no executed command lost its reply, and no
// answered command lost its effect.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir)
	nc, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
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

// TestSignalWithAFailingSnapshot: as in Redis 7, SIGTERM whose snapshot
// cannot be written leaves the server running and says why; once the
// cause is gone, SIGTERM stops it with its snapshot. With
// shutdown-on-sigterm force it exits regardless; with nosave it writes
// none.
func TestSignalWithAFailingSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0")
	c := p.client(t)
	require.NoError(t, c.Incr(ctx, "n").Err())
	// A directory where the snapshot goes: renaming the file over it fails.
	blocker := filepath.Join(dir, "dump.ldb")
	require.NoError(t, os.Mkdir(blocker, 0o755))
	p.cmd.Process.Signal(syscall.SIGTERM)
	for i := 0; !strings.Contains(p.log.String(), "not exiting"); i++ {
		if i == 500 {
			t.Fatalf("no refusal logged:\n%s", p.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n, err := c.Incr(ctx, "n").Result(); err != nil || n != 2 {
		t.Fatalf("after the refused SIGTERM: INCR = %d, %v; want 2 from a server still running", n, err)
	}
	os.Remove(blocker)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d once the snapshot could be written:\n%s", code, p.log)
	}
	if _, err := os.Stat(blocker); err != nil {
		t.Fatalf("no snapshot written at the second SIGTERM: %v", err)
	}

	for _, mode := range []string{"force", "nosave"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			p := mustStart(t, dir, "--save", "0", "--shutdown-on-sigterm", mode)
			require.NoError(t, os.Mkdir(filepath.Join(dir, "dump.ldb"), 0o755))
			p.cmd.Process.Signal(syscall.SIGTERM)
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit code %d:\n%s", code, p.log)
			}
			if strings.Contains(p.log.String(), "not exiting") {
				t.Fatalf("refused to exit with shutdown-on-sigterm %s:\n%s", mode, p.log)
			}
		})
	}
}
