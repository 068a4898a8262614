package tests

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
)

// -soak.scale multiplies the soak test's work per round; -soak.time sets
// how long it repeats rounds (0: one round, or two minutes when CI is set).
var (
	soakScale    = flag.Int("soak.scale", 1, "multiplier for TestSoak's connections and commands")
	soakDuration = flag.Duration("soak.time", 0, "how long TestSoak repeats its rounds (0: one round; two minutes in CI)")
)

// soakTime is how long TestSoak runs rounds for.
func soakTime() time.Duration {
	if *soakDuration > 0 {
		return *soakDuration
	}
	if os.Getenv("CI") != "" {
		return 2 * time.Minute
	}
	return 0
}

// TestSoak runs, all at once against one server: thousands of connections
// opening and closing, pipelined bursts, slow readers that never read their
// replies, clients killed in the middle of a command, and clients killed at
// random by CLIENT KILL. Meanwhile well-behaved clients keep exact counts
// and a bystander is served. Afterwards every count is exact, and the
// server's goroutines, file descriptors and heap are back to their
// baseline.
func TestSoak(t *testing.T) {
	// Not parallel: it measures the server's memory and must run alone.
	if testing.Short() {
		t.Skip("soak test skipped in -short mode")
	}
	scale := *soakScale
	ts, logs := startWith(t, func(c *config.Config) { c.WriteTimeout = 1 }, nil)
	// Let the server's own goroutines start, then take the baseline.
	warm := dialRaw(t, ts.addr)
	warm.send(cmd("PING"))
	warm.mustLine()
	warm.nc.Close()
	waitServerClients(t, ts, 0)
	baseG, baseHeap, baseFDs := goroutines(), heap(), openFDs()

	// Rounds of the whole load until soakTime has passed: one round (a few
	// seconds) by default, two minutes in CI (CI set), longer with
	// -soak.time.
	until := time.Now().Add(soakTime())
	for round := 0; round == 0 || time.Now().Before(until); round++ {
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		fail := func(err error) {
			select {
			case errs <- err:
			default:
			}
		}
		run := func(n int, fn func(i int)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem := make(chan struct{}, 32)
				var inner sync.WaitGroup
				for i := 0; i < n; i++ {
					sem <- struct{}{}
					inner.Add(1)
					go func(i int) {
						defer func() { <-sem; inner.Done() }()
						fn(i)
					}(i)
				}
				inner.Wait()
			}()
		}

		// Churn: open, maybe send, close without reading, or read.
		run(3000*scale, func(i int) {
			nc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				fail(err)
				return
			}
			defer nc.Close()
			switch i % 3 {
			case 0: // connect and leave
			case 1:
				io.WriteString(nc, cmd("PING"))
			case 2:
				io.WriteString(nc, cmd("PING"))
				nc.SetReadDeadline(time.Now().Add(20 * time.Second)) // generous: CI machines are loaded
				if l, err := bufio.NewReader(nc).ReadString('\n'); err != nil || l != "+PONG\r\n" {
					fail(fmt.Errorf("churn PING: %q %v", l, err))
				}
			}
		})

		// Pipelined bursts with exact counts: each connection owns a counter
		// and a limiter key.
		const burst = 2000
		run(20*scale, func(i int) {
			nc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				fail(err)
				return
			}
			defer nc.Close()
			key := "soak:burst:" + strconv.Itoa(round) + ":" + strconv.Itoa(i)
			var b strings.Builder
			for j := 0; j < burst; j++ {
				b.WriteString(cmd("INCR", key+":n"))
				b.WriteString(cmd("CL.THROTTLE", key+":rl", "99", "1", "3600"))
			}
			go io.WriteString(nc, b.String())
			rd := bufio.NewReader(nc)
			nc.SetReadDeadline(time.Now().Add(30 * time.Second))
			admitted := 0
			for j := 0; j < burst; j++ {
				if l, err := rd.ReadString('\n'); err != nil || l != ":"+strconv.Itoa(j+1)+"\r\n" {
					fail(fmt.Errorf("burst %d INCR %d: %q %v", i, j, l, err))
					return
				}
				var lines [6]string
				for k := range lines {
					lines[k], _ = rd.ReadString('\n')
				}
				if lines[1] == ":0\r\n" {
					admitted++
				}
			}
			if admitted != 100 {
				fail(fmt.Errorf("burst %d: %d admitted, want 100", i, admitted))
			}
		})

		// Slow readers: ask for megabytes of replies and never read them. The
		// write timeout must free the server's side.
		run(10*scale, func(i int) {
			nc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				fail(err)
				return
			}
			defer nc.Close()
			nc.(*net.TCPConn).SetReadBuffer(4096)
			big := strings.Repeat("z", 64<<10)
			for j := 0; j < 64; j++ {
				nc.SetWriteDeadline(time.Now().Add(3 * time.Second))
				if _, err := io.WriteString(nc, cmd("ECHO", big)); err != nil {
					return // the server gave up on us: what we want
				}
			}
			time.Sleep(1500 * time.Millisecond) // past client-write-timeout, without reading
		})

		// Killed mid-command: half a frame, then a reset.
		run(500*scale, func(i int) {
			nc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				fail(err)
				return
			}
			frame := cmd("CL.THROTTLE", "soak:killed", "5", "1", "60")
			io.WriteString(nc, frame[:1+i%(len(frame)-1)])
			nc.(*net.TCPConn).SetLinger(0)
			nc.Close()
		})

		// Victims: named connections that PING until a killer closes them
		// with CLIENT KILL ID, picked at random from CLIENT LIST.
		run(200*scale, func(i int) {
			nc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				fail(err)
				return
			}
			defer nc.Close()
			rd := bufio.NewReader(nc)
			nc.SetDeadline(time.Now().Add(30 * time.Second))
			io.WriteString(nc, cmd("CLIENT", "SETNAME", "victim"))
			if l, _ := rd.ReadString('\n'); l != "+OK\r\n" {
				fail(fmt.Errorf("victim SETNAME: %q", l))
				return
			}
			for {
				if _, err := io.WriteString(nc, cmd("PING")); err != nil {
					return
				}
				l, err := rd.ReadString('\n')
				if err != nil {
					return // killed
				}
				if l != "+PONG\r\n" {
					fail(fmt.Errorf("victim PING: %q", l))
					return
				}
			}
		})
		killed := 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ts.client(t, 2)
			defer c.Close()
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end) || killed < 200*scale; {
				if time.Now().After(end.Add(20 * time.Second)) {
					fail(fmt.Errorf("only %d of %d victims killed", killed, 200*scale))
					return
				}
				list, err := c.ClientList(ctx).Result()
				if err != nil {
					fail(err)
					return
				}
				for _, line := range strings.Split(list, "\n") {
					if !strings.Contains(line, " name=victim ") {
						continue
					}
					id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
					if n, err := c.Do(ctx, "CLIENT", "KILL", "ID", id).Int(); err == nil && n == 1 {
						killed++
					}
					break
				}
			}
		}()

		// A bystander, served throughout.
		stopBy := make(chan struct{})
		worstBy := make(chan time.Duration, 1)
		go func() {
			by := dialRaw(t, ts.addr)
			worst := time.Duration(0)
			defer func() { by.nc.Close(); worstBy <- worst }()
			for {
				select {
				case <-stopBy:
					return
				default:
				}
				t0 := time.Now()
				by.send(cmd("PING"))
				by.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
				if l, err := by.rd.ReadString('\n'); err != nil || l != "+PONG\r\n" {
					fail(fmt.Errorf("bystander: %q %v", l, err))
					return
				}
				worst = max(worst, time.Since(t0))
				time.Sleep(10 * time.Millisecond)
			}
		}()

		wg.Wait()
		close(stopBy)
		// Served throughout: a wedged event loop never answers within the
		// guard. How long a PING takes under load is bench/'s to measure;
		// on a busy machine under -race a collection can take seconds.
		if w := <-worstBy; w > 30*time.Second {
			t.Errorf("the bystander waited %v for a PING", w)
		} else {
			t.Logf("the bystander's worst PING: %v; %d victims killed", w, killed)
		}
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		// Nothing the killed clients sent was a whole command.
		c := ts.client(t, 2)
		if n := c.Exists(ctx, "soak:killed").Val(); n != 0 {
			t.Errorf("a half-sent command changed soak:killed")
		}
		for i := 0; i < 20*scale; i++ {
			if v := c.Get(ctx, "soak:burst:"+strconv.Itoa(round)+":"+strconv.Itoa(i)+":n").Val(); v != strconv.Itoa(burst) {
				t.Errorf("counter %d = %s, want %d", i, v, burst)
			}
		}
		c.Close()
	}

	waitServerClients(t, ts, 0)
	deadline := time.Now().Add(10 * time.Second)
	for goroutines() > baseG+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := goroutines(); g > baseG+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d, baseline %d\n%s", g, baseG, buf[:runtime.Stack(buf, true)])
	}
	// The server and the test share a process: every socket of either must
	// be closed again (a poller closes its sockets itself).
	for openFDs() > baseFDs+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := openFDs(); n > baseFDs+2 {
		t.Errorf("open file descriptors: %d, baseline %d", n, baseFDs)
	}
	if h := heap(); h > baseHeap+8<<20 {
		t.Errorf("heap %d MiB after the soak, baseline %d MiB", h>>20, baseHeap>>20)
	}
	if strings.Contains(logs.String(), "panic") {
		t.Errorf("panic logged:\n%s", logs.String())
	}
	t.Logf("baseline %d goroutines, %d KiB heap; after: %d goroutines, %d KiB heap", baseG, baseHeap>>10, goroutines(), heap()>>10)
}

func goroutines() int { return runtime.NumGoroutine() }

// openFDs counts the process's open file descriptors (0 where /proc is not
// there to count them).
func openFDs() int {
	fds, _ := os.ReadDir("/proc/self/fd")
	return len(fds)
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// waitServerClients waits until the server counts n connected clients.
func waitServerClients(t *testing.T, ts *testServer, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for len(ts.srv.CommandServer().Clients()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d clients still connected, want %d", len(ts.srv.CommandServer().Clients()), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
