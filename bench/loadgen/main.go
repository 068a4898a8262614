//go:build linux

// Command loadgen offers a fixed load to a Redis-protocol server and reports
// the latency distribution: p50, p99, p99.9 and max.
//
// It is open-loop: every connection sends on a fixed schedule (rate/conns
// requests a second each) and a request's latency runs from the instant it
// was due, not from when it was sent, so a server that stalls is charged
// for the requests that queued behind the stall (no coordinated omission).
// Each connection has one request in flight, like pipeline 1, or with
// -pipeline P a batch of P requests sent at once (rate/conns/P batches a
// second each), every request of it timed from the batch's due instant.
//
//	loadgen -addr 127.0.0.1:6380 -rate 20000 -duration 5s \
//	        -cmd 'CL.THROTTLE {k} 99 100 60' -keys 100000
//
// {k} in the command becomes key:<n>, n random below -keys (or the single
// key "hot" with -keys 0). Output is one CSV line:
// label,rate,achieved,p50_us,p99_us,p999_us,max_us,errors.
//
// One thread drives every connection and never sleeps: it polls the sockets
// (epoll_wait with no timeout) between sends, so that neither a timer nor
// the wake-up of an idle core stands between a request's due instant and
// its send, or between its reply's arrival and its reading. Give it a core
// of its own (bench/compare.sh pins it): it keeps that core busy.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/limitdb/limitdb/clock"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	rate := flag.Float64("rate", 10000, "offered load, requests per second in total")
	conns := flag.Int("conns", 50, "connections")
	duration := flag.Duration("duration", 5*time.Second, "how long to offer the load")
	command := flag.String("cmd", "PING", "command; {k} becomes a key")
	keys := flag.Int("keys", 100000, "distinct keys ({k}); 0 for one hot key")
	pipeline := flag.Int("pipeline", 1, "requests a connection sends at once")
	label := flag.String("label", "", "first CSV field (default: the command name)")
	header := flag.Bool("header", false, "print the CSV header first")
	flag.Parse()
	if *label == "" {
		*label = strings.Fields(*command)[0]
	}
	lat, errs, elapsed, err := run(*addr, *rate, *conns, max(*pipeline, 1), *duration, strings.Fields(*command), *keys)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
	if *header {
		fmt.Println("label,rate,achieved,p50_us,p99_us,p999_us,max_us,errors")
	}
	slices.Sort(lat)
	us := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / 1e3
	}
	fmt.Printf("%s,%.0f,%.0f,%.1f,%.1f,%.1f,%.1f,%d\n", *label, *rate,
		float64(len(lat))/elapsed.Seconds(), us(0.50), us(0.99), us(0.999), us(1), errs)
}

// conn is one connection's schedule and the reply it waits for.
type conn struct {
	nc       net.Conn // kept so that its descriptor stays open
	fd       int
	first    time.Duration // due instant of its first request, from start
	sent     int           // batches sent
	inflight int           // requests of the last batch not answered yet
	in       []byte        // reply bytes read and not consumed yet
	out      []byte
	rnd      *rand.Rand
}

// run offers the load in batches of pipeline requests and returns every
// request's latency in nanoseconds.
func run(addr string, rate float64, conns, pipeline int, d time.Duration, cmd []string, keys int) ([]int64, int, time.Duration, error) {
	runtime.LockOSThread()
	interval := time.Duration(float64(conns*pipeline) / rate * 1e9)
	perConn := int(d / interval)
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, 0, 0, err
	}
	defer syscall.Close(epfd)
	cs := make([]*conn, conns)
	byFd := map[int]*conn{}
	for i := range cs {
		c, err := dial(addr, epfd)
		if err != nil {
			return nil, 0, 0, err
		}
		defer c.nc.Close()
		// stagger the connections over one interval
		c.first = 10*time.Millisecond + interval*time.Duration(i)/time.Duration(conns)
		c.rnd = rand.New(rand.NewSource(int64(i)))
		cs[i], byFd[c.fd] = c, c
	}
	lat := make([]int64, 0, conns*perConn*pipeline)
	errs, done := 0, 0
	events := make([]syscall.EpollEvent, conns)
	buf := make([]byte, 64<<10)
	clk := clock.Real()
	start := clk.Mono()
	for done < conns*perConn {
		now := (clk.Mono() - start)
		if now > d+30*time.Second {
			return nil, 0, 0, fmt.Errorf("%d of %d requests unanswered 30 s after the last was due", conns*perConn-done, conns*perConn)
		}
		for _, c := range cs {
			if c.inflight > 0 || c.sent == perConn || now < c.due(c.sent, interval) {
				continue
			}
			c.out = c.out[:0]
			for range pipeline {
				c.out = encode(c.out, cmd, keys, c.rnd)
			}
			if err := writeAll(c.fd, c.out); err != nil {
				return nil, 0, 0, err
			}
			c.inflight = pipeline
		}
		n, err := syscall.EpollWait(epfd, events, 0)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return nil, 0, 0, err
		}
		for _, ev := range events[:max(n, 0)] {
			c := byFd[int(ev.Fd)]
			k, err := syscall.Read(c.fd, buf)
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || k == 0 {
				return nil, 0, 0, fmt.Errorf("reading a reply: %v (read %d)", err, k)
			}
			c.in = append(c.in, buf[:k]...)
			at := clk.Mono() - start
			used := 0
			for used < len(c.in) {
				size, isErr, err := replyLen(c.in[used:])
				if err != nil {
					return nil, 0, 0, err
				}
				if size == 0 {
					break // not whole yet
				}
				if c.inflight == 0 {
					return nil, 0, 0, fmt.Errorf("unexpected reply bytes %q", c.in[used:])
				}
				used += size
				lat = append(lat, int64(at-c.due(c.sent, interval)))
				if isErr {
					errs++
				}
				if c.inflight--; c.inflight == 0 {
					c.sent++
					done++
				}
			}
			c.in = c.in[:copy(c.in, c.in[used:])]
		}
	}
	return lat, errs, (clk.Mono() - start) - 10*time.Millisecond, nil
}

// due is when the connection's i-th request falls due, from the start.
func (c *conn) due(i int, interval time.Duration) time.Duration {
	return c.first + time.Duration(i)*interval
}

// dial connects to addr and watches the socket for input on epfd. The
// socket is Go's own, already non-blocking; loadgen reads and writes its
// descriptor directly and never through nc.
func dial(addr string, epfd int) (*conn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc, fd: -1}
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err == nil {
		err = raw.Control(func(fd uintptr) { c.fd = int(fd) })
	}
	if err == nil {
		err = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, c.fd,
			&syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(c.fd)})
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// writeAll writes b to the non-blocking socket fd, spinning while its
// buffer is full (a request is a few dozen bytes: it never is).
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func encode(b []byte, cmd []string, keys int, rnd *rand.Rand) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(cmd)), 10)
	b = append(b, "\r\n"...)
	for _, a := range cmd {
		if a == "{k}" {
			a = "hot"
			if keys > 0 {
				a = "key:" + strconv.Itoa(rnd.Intn(keys))
			}
		}
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// replyLen is the length of the RESP2 reply at the start of b, and whether
// it is (or, for an array, holds) an error; 0 when b does not hold a whole
// reply yet.
func replyLen(b []byte) (n int, isErr bool, err error) {
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 {
		return 0, false, nil
	}
	if end == 0 {
		return 0, false, errors.New("empty reply line")
	}
	line, n := b[1:end], end+2
	switch b[0] {
	case '+', ':':
		return n, false, nil
	case '-':
		return n, true, nil
	case '$':
		size, err := strconv.Atoi(string(line))
		if err != nil {
			return 0, false, fmt.Errorf("bulk length %q", line)
		}
		if size < 0 {
			return n, false, nil
		}
		if len(b) < n+size+2 {
			return 0, false, nil
		}
		return n + size + 2, false, nil
	case '*':
		count, err := strconv.Atoi(string(line))
		if err != nil {
			return 0, false, fmt.Errorf("array length %q", line)
		}
		for range max(count, 0) {
			k, e, err := replyLen(b[n:])
			if err != nil || k == 0 {
				return 0, false, err
			}
			n += k
			isErr = isErr || e
		}
		return n, isErr, nil
	}
	return 0, false, fmt.Errorf("unexpected reply %q", b)
}
