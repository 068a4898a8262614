package httplimit_test

import (
	"log"
	"net/http"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/httplimit"
	"github.com/redis/go-redis/v9"
)

func Example() {
	rdb := redis.NewClient(client.Options("127.0.0.1:6379"))
	limit := client.SlidingLog{Limit: 100, Window: time.Minute}
	m, err := httplimit.New(httplimit.Options{
		Limiter: httplimit.Remote{Client: client.New(rdb), Limit: limit},
		Key:     httplimit.ByHeader("X-Api-Key"),
		Policy:  httplimit.FailOpen, // limitdb down: serve unlimited, and say so in the logs
		OnError: func(r *http.Request, err error) { log.Printf("rate limiter: %v", err) },
		Clock:   clock.Real(),
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello\n")) })
	_ = http.ListenAndServe("127.0.0.1:8080", m.Wrap(mux))
}
