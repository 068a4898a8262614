// Command http-api is a small HTTP API rate-limited by limitdb: each API key
// (or, without one, each client IP) gets 10 requests at once and 1 per
// second after that. If limitdb stops answering within 50 ms, every
// instance keeps limiting on its own with an in-process GCRA.
//
//	go run ./cmd/limitdb --port 6380 &
//	go run ./examples/http-api --limitdb 127.0.0.1:6380 --listen 127.0.0.1:8080
//	curl -i -H 'X-Api-Key: demo' http://127.0.0.1:8080/hello
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/httplimit"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("limitdb", "127.0.0.1:6379", "limitdb address")
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP address")
	flag.Parse()

	limit := client.Throttle{MaxBurst: 9, Count: 1, Period: time.Second}
	rdb := redis.NewClient(client.Options(*addr))
	defer rdb.Close()
	clk := clock.Real()
	local, err := httplimit.NewLocal(limit.Approx(), clk)
	if err != nil {
		log.Fatal(err)
	}
	m, err := httplimit.New(httplimit.Options{
		Limiter:  httplimit.Remote{Client: client.New(rdb), Limit: limit},
		Key:      apiKeyOrIP,
		Prefix:   "http-api:",
		Timeout:  50 * time.Millisecond,
		Policy:   httplimit.Fallback,
		Fallback: local,
		OnError:  func(r *http.Request, err error) { log.Printf("limitdb unavailable, limiting locally: %v", err) },
		Clock:    clk,
	})
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	log.Printf("listening on http://%s, limited by limitdb at %s", *listen, *addr)
	log.Fatal(http.ListenAndServe(*listen, m.Wrap(mux)))
}

// apiKeyOrIP charges a request to its API key, or to its IP without one.
func apiKeyOrIP(r *http.Request) (string, error) {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return "key:" + k, nil
	}
	return httplimit.ByIP(r)
}
