package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/internal/testlog"
	"github.com/stretchr/testify/require"
)

// TestClientKillIsDoneWhenAnswered: once CLIENT KILL has answered, the
// victim runs nothing more. Each trial kills a fresh connection and at
// once sends it a command; in 300 trials none may run (Redis: none).
func TestClientKillIsDoneWhenAnswered(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	dial := func() (net.Conn, *bufio.Reader) {
		nc, err := net.Dial("tcp", ts.addr)
		require.NoError(t, err)
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

// TestTimeoutClosesATrickle: with timeout 1, a client that sends one byte
// of a command every 200 ms is closed about a second after its last whole
// command, on the event loop and on a goroutine per connection alike,
// while a client that keeps sending whole commands stays.
func TestTimeoutClosesATrickle(t *testing.T) {
	t.Parallel()
	for _, loop := range []bool{true, false} {
		t.Run(fmt.Sprint("event-loop=", loop), func(t *testing.T) {
			t.Parallel()
			ts, _ := startWith(t, func(c *config.Config) { c.Timeout, c.EventLoop = 1, loop }, nil)
			busy := dialRaw(t, ts.addr)
			slow := dialRaw(t, ts.addr)
			slow.send(cmd("PING"))
			if got := slow.mustLine(); got != "+PONG" {
				t.Fatal(got)
			}
			trickle := cmd("ECHO", strings.Repeat("x", 100))
			start := time.Now()
			closedAfter := time.Duration(0)
			for i := 0; i < len(trickle) && closedAfter == 0; i++ {
				if _, err := slow.nc.Write([]byte{trickle[i]}); err != nil {
					closedAfter = time.Since(start)
					break
				}
				busy.send(cmd("PING"))
				if got := busy.mustLine(); got != "+PONG" {
					t.Fatalf("the busy client after %v: %q", time.Since(start), got)
				}
				time.Sleep(200 * time.Millisecond)
				if time.Since(start) > 5*time.Second {
					break
				}
			}
			if closedAfter == 0 && !slow.closed() {
				t.Fatalf("a client trickling a byte every 200 ms was not closed in %v", time.Since(start))
			}
			if el := time.Since(start); el > 4*time.Second {
				t.Errorf("closed after %v, want about 1 s", el)
			}
		})
	}
}

// TestFewFileDescriptors: started with ulimit -n 100, the server lowers
// maxclients to what fits (100 less the 32 it keeps for itself) and says
// so, as Redis does, instead of failing accepts at maxclients.
func TestFewFileDescriptors(t *testing.T) {
	t.Parallel()
	bin := limitdbBinary(t)
	proc := exec.Command("sh", "-c", `ulimit -n 100 && exec "$0" "$@"`, bin, "--port", "0", "--dir", t.TempDir(), "--save", "0")
	var out testlog.Buffer
	proc.Stderr = &out
	require.NoError(t, proc.Start())
	defer func() { proc.Process.Kill(); proc.Wait() }()
	var addr string
	for i := 0; addr == ""; i++ {
		if i == 2000 {
			t.Fatalf("did not start:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
		if m := listenRE.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
	}
	if !strings.Contains(out.String(), "only 100 open files allowed") {
		t.Errorf("no warning about the file limit:\n%s", out.String())
	}
	r := dialRaw(t, addr)
	r.send(cmd("CONFIG", "GET", "maxclients"))
	var lines []string
	for i := 0; i < 5; i++ { // *2, $10, maxclients, $2, 68
		lines = append(lines, r.mustLine())
	}
	if got := lines[4]; got != "68" {
		t.Errorf("maxclients = %q, want 68", got)
	}
}
