// Command delayproxy forwards TCP connections to a target, holding every
// chunk for a one-way delay in each direction: the wide-area link between
// two regions on loopback, where netem is not available (bench/global.sh).
//
//	delayproxy -listen 127.0.0.1:7001 -target 127.0.0.1:6380 -delay 40ms
package main

import (
	"flag"
	"log"
	"net"
	"time"

	"github.com/limitdb/limitdb/clock"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to accept on")
	target := flag.String("target", "127.0.0.1:6379", "address to forward to")
	delay := flag.Duration("delay", 40*time.Millisecond, "one-way delay, each direction")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	clk := clock.Real()
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			up, err := net.Dial("tcp", *target)
			if err != nil {
				c.Close()
				return
			}
			go pipe(clk, c, up, *delay)
			go pipe(clk, up, c, *delay)
		}()
	}
}

// pipe copies src to dst, each chunk written delay after it was read.
func pipe(clk clock.Clock, src, dst net.Conn, delay time.Duration) {
	type chunk struct {
		b   []byte
		due int64
	}
	q := make(chan chunk, 4096)
	go func() {
		defer dst.Close()
		for ch := range q {
			if wait := time.Duration(ch.due - clk.Now()); wait > 0 {
				clk.Sleep(wait)
			}
			if _, err := dst.Write(ch.b); err != nil {
				src.Close()
				return
			}
		}
	}()
	defer close(q)
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{append([]byte(nil), buf[:n]...), clk.Now() + int64(delay)}
		}
		if err != nil {
			return
		}
	}
}
