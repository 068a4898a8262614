package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/httplimit"
	"github.com/redis/go-redis/v9"
)

func inFlight(t *testing.T, addr string, limit int64) httplimit.InFlight {
	rdb := redis.NewClient(client.Options(addr))
	t.Cleanup(func() { rdb.Close() })
	return httplimit.InFlight{Client: client.New(rdb), Limit: client.Concurrency{Limit: limit, TTL: 30 * time.Second}}
}

// TestInFlightReleasesAfterTheHandler: a slot is held while the handler
// runs and freed when it returns, when it panics, and when the client
// went away before it returned.
func TestInFlightReleasesAfterTheHandler(t *testing.T) {
	t.Parallel()
	entered, proceed := make(chan struct{}), make(chan struct{})
	mode := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch <-mode {
		case "client leaves":
			cancel()
		case "block":
			entered <- struct{}{}
			<-proceed
		case "panic":
			panic("handler bug")
		}
		w.Write([]byte("ok"))
	})
	m, err := httplimit.New(httplimit.Options{
		Limiter: inFlight(t, serve(t), 1), Key: httplimit.ByHeader("X-Api-Key"),
		Clock: clock.NewFake(t0.UnixNano()), Timeout: 10 * time.Second,
		OnError: func(r *http.Request, err error) { t.Errorf("limiter failed: %v", err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	wrapped := m.Wrap(h)

	// A request holds the only slot while its handler runs.
	mode <- "block"
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- get(wrapped, "k") }()
	<-entered
	w := get(wrapped, "k")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "30" {
		t.Fatalf("a second request in flight: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	close(proceed)
	if w := <-done; w.Code != http.StatusOK || w.Header().Get("RateLimit-Remaining") != "0" {
		t.Fatalf("the first request: %d %v", w.Code, w.Header())
	}

	// Released when the handler returned: the next one runs, and panics.
	mode <- "panic"
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the handler's panic did not reach the server")
			}
		}()
		if w := get(wrapped, "k"); w.Code != http.StatusOK {
			t.Errorf("after the first returned: %d", w.Code)
		}
	}()
	drained(t, mode, "after the first request returned")

	// Released during the panic: the next one runs, and its client goes
	// away before its handler returns.
	mode <- "client leaves"
	r := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	r.Header.Set("X-Api-Key", "k")
	rec := httptest.NewRecorder()
	wrapped.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		t.Errorf("after the panic: %d: the panicking request kept its slot", rec.Code)
	}
	drained(t, mode, "after the panic")
	mode <- "ok"
	if w := get(wrapped, "k"); w.Code != http.StatusOK {
		t.Errorf("after a request whose client had gone: %d: its slot was not released", w.Code)
	}
	drained(t, mode, "after the client went away")
}

// drained fails the test when the handler did not take its mode (the
// request was refused), and empties mode so the next step can go on.
func drained(t *testing.T, mode chan string, when string) {
	t.Helper()
	select {
	case m := <-mode:
		t.Errorf("%s: the handler never ran (mode %q left): a slot was not released", when, m)
	default:
	}
}
