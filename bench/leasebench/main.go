// Command leasebench drives acquire-then-release pairs of a concurrency
// limit against one server, for bench/leases.sh: on limitdb CL.ACQUIRE
// key limit ttl id then CL.RELEASE key id; on redis-server the hand-written
// sorted-set script (bench/lua/lease_acquire.lua, by EVALSHA) then ZREM key
// id, as redis-semaphore releases. Each connection pipelines -pipeline
// pairs per round trip over -keys random keys, under a limit no key
// reaches, so every pair is admitted and released; a pair that is not is
// an error. It prints the pairs per second it completed.
//
//	leasebench -addr 127.0.0.1:6379 -mode lua -script bench/lua/lease_acquire.lua -duration 10s
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	mode := flag.String("mode", "limitdb", "limitdb (CL.ACQUIRE/CL.RELEASE) or lua (EVALSHA of -script, then ZREM)")
	script := flag.String("script", "bench/lua/lease_acquire.lua", "the sorted-set acquire script, for -mode lua")
	clients := flag.Int("clients", 50, "connections")
	pipeline := flag.Int("pipeline", 16, "pairs per round trip")
	keys := flag.Int("keys", 10000, "keys the pairs spread over")
	duration := flag.Duration("duration", 10*time.Second, "how long to run")
	flag.Parse()
	if err := run(clock.Real(), *addr, *mode, *script, *clients, *pipeline, *keys, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "leasebench:", err)
		os.Exit(1)
	}
}

func run(clk clock.Clock, addr, mode, script string, clients, pipeline, keys int, duration time.Duration) error {
	var sha string
	if mode == "lua" {
		src, err := os.ReadFile(script)
		if err != nil {
			return err
		}
		if sha, err = loadScript(addr, src); err != nil {
			return err
		}
	} else if mode != "limitdb" {
		return fmt.Errorf("unknown mode %q", mode)
	}
	var pairs atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	stop := make(chan struct{})
	start := clk.Mono()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			if err := client(clk, addr, mode, sha, c, pipeline, keys, stop, &pairs); err != nil {
				once.Do(func() { firstErr = err; close(stop) })
			}
		}(c)
	}
	select {
	case <-clk.After(duration):
		once.Do(func() { close(stop) })
	case <-stop:
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	elapsed := (clk.Mono() - start).Seconds()
	fmt.Printf("pairs %d seconds %.3f pairs_per_sec %.0f\n", pairs.Load(), elapsed, float64(pairs.Load())/elapsed)
	return nil
}

// loadScript is SCRIPT LOAD src's sha on addr.
func loadScript(addr string, src []byte) (string, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.Write(command(nil, "SCRIPT", "LOAD", string(src))); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 4 || line[0] != '$' {
		return "", fmt.Errorf("SCRIPT LOAD: %q %v", line, err)
	}
	n, err := strconv.Atoi(line[1 : len(line)-2])
	if err != nil || n < 1 {
		return "", fmt.Errorf("SCRIPT LOAD: %q", line)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// client runs pairs on one connection until stop.
func client(clk clock.Clock, addr, mode, sha string, c, pipeline, keys int, stop chan struct{}, pairs *atomic.Int64) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 64<<10)
	var out []byte
	rng := rand.New(rand.NewPCG(uint64(c), 1))
	const limit, ttlMs = "1000000", "60000"
	for seq := 0; ; {
		select {
		case <-stop:
			return nil
		default:
		}
		out = out[:0]
		now := strconv.FormatInt(clk.Now()/1e6, 10) // the script's now, in ms, as redis-semaphore's callers pass it
		for i := 0; i < pipeline; i++ {
			key := "lease:" + strconv.Itoa(rng.IntN(keys))
			id := "c" + strconv.Itoa(c) + "-" + strconv.Itoa(seq)
			seq++
			if mode == "limitdb" {
				out = command(out, "CL.ACQUIRE", key, limit, ttlMs+"ms", id)
				out = command(out, "CL.RELEASE", key, id)
			} else {
				out = command(out, "EVALSHA", sha, "1", key, limit, id, ttlMs, now)
				out = command(out, "ZREM", key, id)
			}
		}
		if _, err := conn.Write(out); err != nil {
			return err
		}
		for i := 0; i < pipeline; i++ {
			admitted, err := reply(r)
			if err != nil {
				return err
			}
			// CL.ACQUIRE answers [0, ...] when admitted, the script 1.
			if (mode == "limitdb" && admitted != 0) || (mode == "lua" && admitted != 1) {
				return fmt.Errorf("acquire not admitted (%d)", admitted)
			}
			released, err := reply(r)
			if err != nil {
				return err
			}
			if released != 1 {
				return fmt.Errorf("release released %d", released)
			}
		}
		pairs.Add(int64(pipeline))
	}
}

// command appends args as a RESP array of bulk strings.
func command(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

var errReply = errors.New("error reply")

// reply reads one reply and returns its first integer: the integer itself,
// or an array's first element's.
func reply(r *bufio.Reader) (int64, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 3 {
		return 0, fmt.Errorf("short reply %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case ':':
		return strconv.ParseInt(string(body), 10, 64)
	case '-':
		return 0, fmt.Errorf("%w: %s", errReply, body)
	case '$':
		n, err := strconv.Atoi(string(body))
		if err != nil || n < 0 {
			return 0, err
		}
		_, err = r.Discard(n + 2)
		return 0, err
	case '*', '>':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return 0, err
		}
		var first int64
		for i := 0; i < n; i++ {
			v, err := reply(r)
			if err != nil {
				return 0, err
			}
			if i == 0 {
				first = v
			}
		}
		return first, nil
	case '_':
		return 0, nil
	}
	return 0, fmt.Errorf("unexpected reply %q", line)
}
