// Command loadgen offers a fixed load to a Redis-protocol server and reports
// the latency distribution: p50, p99, p99.9 and max.
//
// It is open-loop: every connection sends on a fixed schedule (rate/conns
// requests a second each) and a request's latency runs from the instant it
// was due, not from when it was sent, so a server that stalls is charged
// for the requests that queued behind the stall (no coordinated omission).
// Each connection has one request in flight, like pipeline 1.
//
//	loadgen -addr 127.0.0.1:6380 -rate 20000 -duration 5s \
//	        -cmd 'CL.THROTTLE {k} 99 100 60' -keys 100000
//
// {k} in the command becomes key:<n>, n random below -keys (or the single
// key "hot" with -keys 0). Output is one CSV line:
// label,rate,achieved,p50_us,p99_us,p999_us,max_us,errors.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	rate := flag.Float64("rate", 10000, "offered load, requests per second in total")
	conns := flag.Int("conns", 50, "connections")
	duration := flag.Duration("duration", 5*time.Second, "how long to offer the load")
	command := flag.String("cmd", "PING", "command; {k} becomes a key")
	keys := flag.Int("keys", 100000, "distinct keys ({k}); 0 for one hot key")
	label := flag.String("label", "", "first CSV field (default: the command name)")
	header := flag.Bool("header", false, "print the CSV header first")
	flag.Parse()
	if *label == "" {
		*label = strings.Fields(*command)[0]
	}
	lat, errs, elapsed, err := run(*addr, *rate, *conns, *duration, strings.Fields(*command), *keys)
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

// run offers the load and returns every request's latency in nanoseconds.
func run(addr string, rate float64, conns int, d time.Duration, cmd []string, keys int) ([]int64, int, time.Duration, error) {
	interval := time.Duration(float64(conns) / rate * 1e9)
	perConn := int(d / interval)
	var (
		mu   sync.Mutex
		all  []int64
		errs int
		wg   sync.WaitGroup
		fail error
	)
	start := time.Now().Add(10 * time.Millisecond)
	for i := 0; i < conns; i++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, 0, 0, err
		}
		defer nc.Close()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// stagger the connections over one interval
			first := start.Add(interval * time.Duration(i) / time.Duration(conns))
			lat, e, err := client(nc, first, interval, perConn, cmd, keys, rand.New(rand.NewSource(int64(i))))
			mu.Lock()
			all = append(all, lat...)
			errs += e
			if err != nil && fail == nil {
				fail = err
			}
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	return all, errs, time.Since(start), fail
}

// client sends n requests on nc, the i-th due at first + i*interval.
func client(nc net.Conn, first time.Time, interval time.Duration, n int, cmd []string, keys int, rnd *rand.Rand) ([]int64, int, error) {
	lat := make([]int64, 0, n)
	errs := 0
	rd := bufio.NewReader(nc)
	var buf []byte
	for i := 0; i < n; i++ {
		due := first.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		buf = encode(buf[:0], cmd, keys, rnd)
		if _, err := nc.Write(buf); err != nil {
			return lat, errs, err
		}
		isErr, err := readReply(rd)
		if err != nil {
			return lat, errs, err
		}
		if isErr {
			errs++
		}
		lat = append(lat, int64(time.Since(due)))
	}
	return lat, errs, nil
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

// readReply reads one RESP2 reply and reports whether it was an error.
func readReply(rd *bufio.Reader) (bool, error) {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return false, err
	}
	if len(line) < 3 {
		return false, errors.New("short reply line")
	}
	switch line[0] {
	case '+', ':':
		return false, nil
	case '-':
		return true, nil
	case '$':
		n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
		if n >= 0 {
			_, err = io.CopyN(io.Discard, rd, int64(n)+2)
		}
		return false, err
	case '*':
		n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
		anyErr := false
		for i := 0; i < n; i++ {
			e, err := readReply(rd)
			if err != nil {
				return false, err
			}
			anyErr = anyErr || e
		}
		return anyErr, nil
	}
	return false, fmt.Errorf("unexpected reply %q", line)
}
