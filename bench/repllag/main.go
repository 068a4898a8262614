// Command repllag measures how long a write on a primary takes to be
// readable on its replica: it writes a counter on the primary every
// interval (SET key n), and reads the replica (GET key) in a loop until it
// shows n; the lag is from the primary's reply to the first read that
// shows it. It works the same against limitdb and redis-server, so a
// benchmark can run it beside a load on both. Output is one CSV line:
// label,samples,p50_us,p99_us,max_us.
//
//	repllag -primary 127.0.0.1:6379 -replica 127.0.0.1:6380 -duration 5s
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/clock"
)

func main() {
	primary := flag.String("primary", "127.0.0.1:6379", "the primary's address")
	replica := flag.String("replica", "127.0.0.1:6380", "the replica's address")
	duration := flag.Duration("duration", 5*time.Second, "how long to measure")
	interval := flag.Duration("interval", 5*time.Millisecond, "between probes")
	key := flag.String("key", "repllag:probe", "the key written")
	label := flag.String("label", "lag", "the CSV line's first field")
	flag.Parse()
	p, err := dial(*primary)
	check(err)
	r, err := dial(*replica)
	check(err)
	clk := clock.Real()
	var lags []time.Duration
	end := clk.Mono() + *duration
	for n := 1; clk.Mono() < end; n++ {
		want := strconv.Itoa(n)
		_, err := p.do("SET", *key, want)
		check(err)
		wrote := clk.Mono()
		for {
			got, err := r.do("GET", *key)
			check(err)
			if got == want {
				lags = append(lags, clk.Mono()-wrote)
				break
			}
			if clk.Mono()-wrote > 10*time.Second {
				fmt.Fprintf(os.Stderr, "repllag: probe %d not on the replica after 10s\n", n)
				os.Exit(1)
			}
		}
		clk.Sleep(*interval)
	}
	slices.Sort(lags)
	q := func(f float64) int64 { return lags[int(f*float64(len(lags)-1))].Microseconds() }
	fmt.Printf("%s,%d,%d,%d,%d\n", *label, len(lags), q(0.5), q(0.99), lags[len(lags)-1].Microseconds())
}

// conn is a minimal RESP client for SET and GET.
type conn struct {
	c  net.Conn
	rd *bufio.Reader
}

func dial(addr string) (*conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, rd: bufio.NewReader(c)}, nil
}

// do sends a command and returns a simple or bulk string reply ("" for
// null).
func (c *conn) do(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := c.rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "+"):
		return line[1:], nil
	case strings.HasPrefix(line, "-"):
		return "", fmt.Errorf("%s", line[1:])
	case line == "$-1":
		return "", nil
	case strings.HasPrefix(line, "$"):
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(c.rd, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "repllag:", err)
		os.Exit(1)
	}
}
