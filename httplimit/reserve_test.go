package httplimit_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/httplimit"
	"github.com/redis/go-redis/v9"
)

// TestReserveThenSettle: the middleware reserves the estimate before the
// handler (the headers say so), and settles what the handler reports once
// it returns; a request over the budget gets 429 and never runs.
func TestReserveThenSettle(t *testing.T) {
	t.Parallel()
	addr := serve(t)
	rdb := redis.NewClient(client.Options(addr))
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	if err := rdb.Do(ctx, "RL.POLICY", "SET", "tpm", "token_bucket", 1000, "1h").Err(); err != nil {
		t.Fatal(err)
	}
	ran := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran++
		httplimit.ReportCost(r.Context(), 120) // the answer's real token count
	})
	m, err := httplimit.New(httplimit.Options{
		Reserve: &httplimit.Reservations{Client: client.New(rdb), Policy: "tpm",
			Estimate: func(r *http.Request) int64 { n, _ := strconv.ParseInt(r.Header.Get("X-Max-Tokens"), 10, 64); return n }},
		Key:     httplimit.ByHeader("X-Api-Key"),
		Clock:   clock.NewFake(t0.UnixNano()),
		Timeout: 10 * time.Second,
		OnError: func(r *http.Request, err error) { t.Errorf("limiter failed: %v", err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := m.Wrap(h)
	for i, c := range []struct {
		estimate           string
		code               int
		remainingHeader    string
		remainingAfterward int64
	}{
		{"800", 200, "200", 880},
		{"800", 200, "80", 760},
		{"900", 429, "760", 760},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("X-Api-Key", "tenant")
		r.Header.Set("X-Max-Tokens", c.estimate)
		w := &recorder{header: http.Header{}, code: 200}
		srv.ServeHTTP(w, r)
		v, err := rdb.Do(ctx, "RL.HIT", "tpm", "X-Api-Key:tenant", 0).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		if w.code != c.code || w.header.Get("RateLimit-Remaining") != c.remainingHeader || v[2] != c.remainingAfterward {
			t.Errorf("request %d: %d, RateLimit-Remaining %s, remaining afterwards %d; want %d, %s, %d",
				i, w.code, w.header.Get("RateLimit-Remaining"), v[2], c.code, c.remainingHeader, c.remainingAfterward)
		}
	}
	if ran != 2 {
		t.Errorf("the handler ran %d times, want 2", ran)
	}
}

type recorder struct {
	header http.Header
	code   int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *recorder) WriteHeader(code int)        { r.code = code }
