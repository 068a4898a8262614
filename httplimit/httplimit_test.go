package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/httplimit"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// serve starts a limitdb server on a free loopback port with a fake clock.
func serve(t *testing.T) string {
	t.Helper()
	cfg := config.Default()
	cfg.Save = 0 // the test steps the clock, which would run automatic snapshots
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	srv := node.New(cfg, engine.New(clock.NewFake(t0.UnixNano()), 0), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func remote(t *testing.T, addr string, l client.Limit) httplimit.Remote {
	rdb := redis.NewClient(client.Options(addr))
	t.Cleanup(func() { rdb.Close() })
	return httplimit.Remote{Client: client.New(rdb), Limit: l}
}

// closedAddr is a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })

func newHandler(t *testing.T, o httplimit.Options) http.Handler {
	t.Helper()
	if o.Key == nil {
		o.Key = httplimit.ByHeader("X-Api-Key")
	}
	if o.Clock == nil {
		o.Clock = clock.NewFake(t0.UnixNano())
	}
	// Tests about decisions must not depend on the machine's speed: a cold
	// connection under the race detector can outlast the 50 ms default.
	// Tests about timeouts and failures set their own.
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.OnError == nil {
		o.OnError = func(r *http.Request, err error) { t.Errorf("limiter failed: %v", err) }
	}
	m, err := httplimit.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m.Wrap(ok)
}

func get(h http.Handler, apiKey string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/", nil)
	if apiKey != "" {
		r.Header.Set("X-Api-Key", apiKey)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHeadersAnd429(t *testing.T) {
	t.Parallel()
	h := newHandler(t, httplimit.Options{
		Limiter: remote(t, serve(t), client.Throttle{MaxBurst: 1, Count: 1, Period: time.Minute}),
		Prefix:  "api:",
	})
	type want struct {
		code                         int
		limit, remaining, reset, xre string
		retry                        string
	}
	steps := []struct {
		key  string
		want want
	}{
		{"alice", want{200, "2", "1", "60", "1767225660", ""}},
		{"alice", want{200, "2", "0", "120", "1767225720", ""}},
		{"alice", want{429, "2", "0", "120", "1767225720", "60"}},
		{"bob", want{200, "2", "1", "60", "1767225660", ""}},
		{"", want{400, "", "", "", "", ""}},
	}
	for i, s := range steps {
		w := get(h, s.key)
		h := w.Header()
		got := want{w.Code, h.Get("RateLimit-Limit"), h.Get("RateLimit-Remaining"), h.Get("RateLimit-Reset"), h.Get("X-RateLimit-Reset"), h.Get("Retry-After")}
		if got != s.want {
			t.Errorf("step %d (%q): %+v, want %+v", i, s.key, got, s.want)
		}
		if x, y := h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"); x != s.want.limit || y != s.want.remaining {
			t.Errorf("step %d: X-RateLimit-Limit/Remaining %s/%s, want %s/%s", i, x, y, s.want.limit, s.want.remaining)
		}
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	local, err := httplimit.NewLocal(client.Rate{Burst: 0, Interval: time.Minute}, clock.NewFake(t0.UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		policy httplimit.FailurePolicy
		codes  []int // two requests with the same key
	}{
		{httplimit.FailOpen, []int{200, 200}},
		{httplimit.FailClosed, []int{503, 503}},
		{httplimit.Fallback, []int{200, 429}},
	}
	for _, tc := range cases {
		var failures atomic.Int64
		h := newHandler(t, httplimit.Options{
			Limiter:  remote(t, closedAddr(t), client.Throttle{MaxBurst: 5, Count: 1, Period: time.Minute}),
			Policy:   tc.policy,
			Fallback: local,
			Cooldown: -1, // every request tries limitdb
			OnError: func(r *http.Request, err error) {
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
					failures.Add(1)
				}
			},
		})
		for i, want := range tc.codes {
			w := get(h, "carol")
			if w.Code != want {
				t.Errorf("policy %d, request %d: %d, want %d", tc.policy, i, w.Code, want)
			}
			// Only a decision (the fallback's) carries limit headers.
			if got, want := w.Header().Get("RateLimit-Limit") != "", tc.policy == httplimit.Fallback; got != want {
				t.Errorf("policy %d, request %d: RateLimit-Limit present = %v, want %v", tc.policy, i, got, want)
			}
		}
		// A closed port is refused at once: the errors are not timeouts.
		if n := failures.Load(); n != 2 {
			t.Errorf("policy %d: OnError saw %d connection failures, want 2", tc.policy, n)
		}
	}
}

// spy is a Limiter that records the deadline of each call and fails.
type spy struct {
	mu        sync.Mutex
	deadlines []time.Time
}

func (s *spy) Take(ctx context.Context, key string) (client.Result, error) {
	d, _ := ctx.Deadline()
	s.mu.Lock()
	s.deadlines = append(s.deadlines, d)
	s.mu.Unlock()
	return client.Result{}, errors.New("down")
}

func TestTimeoutIsApplied(t *testing.T) {
	t.Parallel()
	sp := &spy{}
	const timeout = 30 * time.Millisecond
	h := newHandler(t, httplimit.Options{Limiter: sp, Timeout: timeout, Cooldown: -1, OnError: func(*http.Request, error) {}})
	before := time.Now()
	get(h, "dave")
	after := time.Now()
	if len(sp.deadlines) != 1 {
		t.Fatalf("%d calls, want 1", len(sp.deadlines))
	}
	d := sp.deadlines[0]
	// context.WithTimeout read the clock between before and after.
	if d.Before(before.Add(timeout)) || d.After(after.Add(timeout)) {
		t.Fatalf("deadline %v is not Timeout after the request (%v..%v)", d, before.Add(timeout), after.Add(timeout))
	}
}

func TestCooldownSkipsLimitdb(t *testing.T) {
	t.Parallel()
	sp := &spy{}
	clk := clock.NewFake(t0.UnixNano())
	h := newHandler(t, httplimit.Options{Limiter: sp, Cooldown: time.Second, Policy: httplimit.FailClosed,
		Clock: clk, OnError: func(*http.Request, error) {}})
	steps := []struct {
		advance time.Duration
		calls   int
	}{
		{0, 1},                      // fails: limitdb is down for a second
		{500 * time.Millisecond, 1}, // inside the cooldown: not asked
		{499 * time.Millisecond, 1},
		{time.Millisecond, 2}, // cooldown over: asked again
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		if w := get(h, "erin"); w.Code != 503 {
			t.Errorf("step %d: %d, want 503", i, w.Code)
		}
		if len(sp.deadlines) != s.calls {
			t.Errorf("step %d: %d calls to limitdb, want %d", i, len(sp.deadlines), s.calls)
		}
	}
}

// TestHungLimitdb: a server that accepts connections and never answers. The
// request still completes, through the policy, because the middleware's
// timeout reaches go-redis' reads (client.Options enables that).
func TestHungLimitdb(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() { defer conns.Done(); defer c.Close(); c.Read(make([]byte, 1<<16)); <-time.After(time.Minute) }()
		}
	}()
	var timeouts atomic.Int64
	h := newHandler(t, httplimit.Options{
		Limiter: remote(t, ln.Addr().String(), client.Throttle{MaxBurst: 5, Count: 1, Period: time.Minute}),
		Timeout: 20 * time.Millisecond,
		Policy:  httplimit.FailClosed,
		OnError: func(r *http.Request, err error) {
			var ne net.Error
			if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
				timeouts.Add(1)
			}
		},
	})
	done := make(chan int)
	go func() { done <- get(h, "frank").Code }()
	select {
	case code := <-done:
		if code != 503 {
			t.Fatalf("code %d, want 503", code)
		}
	case <-time.After(10 * time.Second): // a bound for a broken build, not a measurement
		t.Fatal("request still waiting on a hung limitdb")
	}
	if timeouts.Load() != 1 {
		t.Fatalf("OnError saw %d timeouts, want 1", timeouts.Load())
	}
}

func TestLocal(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0.UnixNano())
	l, err := httplimit.NewLocal(client.Rate{Burst: 1, Interval: time.Second}, clk)
	if err != nil {
		t.Fatal(err)
	}
	s := time.Second
	steps := []struct {
		advance time.Duration
		want    client.Result
	}{
		{0, client.Result{Limit: 2, Remaining: 1, ResetAfter: s}},
		{0, client.Result{Limit: 2, Remaining: 0, ResetAfter: 2 * s}},
		{0, client.Result{Limited: true, Limit: 2, RetryAfter: s, ResetAfter: 2 * s}},
		{s, client.Result{Limit: 2, Remaining: 0, ResetAfter: 2 * s}},
		{5 * s, client.Result{Limit: 2, Remaining: 1, ResetAfter: s}},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		got, err := l.Take(context.Background(), "k")
		if err != nil || got != st.want {
			t.Errorf("step %d: %+v, %v; want %+v", i, got, err, st.want)
		}
	}
}

// fixed is a Limiter that always answers r.
type fixed client.Result

func (f fixed) Take(context.Context, string) (client.Result, error) { return client.Result(f), nil }

func TestNeverFitsHasNoRetryAfter(t *testing.T) {
	t.Parallel()
	h := newHandler(t, httplimit.Options{Limiter: fixed{Limited: true, Limit: 5, RetryAfter: client.Never, ResetAfter: 1500 * time.Millisecond}})
	w := get(h, "hank")
	if w.Code != 429 || w.Header().Get("Retry-After") != "" || w.Header().Get("RateLimit-Reset") != "2" {
		t.Fatalf("code %d, Retry-After %q, RateLimit-Reset %q; want 429, none, 2", w.Code, w.Header().Get("Retry-After"), w.Header().Get("RateLimit-Reset"))
	}
}

// TestLeakyQueueDelaysTheHandler: LB.QUEUE's admitted requests wait their
// Delay before the handler runs; a client that leaves while queued never
// reaches it.
func TestLeakyQueueDelaysTheHandler(t *testing.T) {
	t.Parallel()
	m, err := httplimit.New(httplimit.Options{
		Limiter: remote(t, serve(t), client.LeakyQueue{Capacity: 3, Rate: 10, Period: time.Second}),
		Key:     httplimit.ByHeader("X-Api-Key"), Timeout: 10 * time.Second,
		Clock: clock.NewFake(t0.UnixNano()),
	})
	if err != nil {
		t.Fatal(err)
	}
	var waited []time.Duration
	gone := false
	httplimit.SetWait(m, func(ctx context.Context, d time.Duration) error {
		waited = append(waited, d)
		if gone {
			return context.Canceled
		}
		return nil
	})
	served := 0
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ }))
	steps := []struct {
		gone   bool
		code   int
		waited []time.Duration
		served int
	}{
		{false, 200, nil, 1}, // the queue was empty: no wait
		{false, 200, []time.Duration{100 * time.Millisecond}, 2},
		{true, 200, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, 2}, // left while queued
		{false, 429, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, 2},
	}
	for i, s := range steps {
		gone = s.gone
		w := get(h, "judy")
		if w.Code != s.code || fmt.Sprint(waited) != fmt.Sprint(s.waited) || served != s.served {
			t.Errorf("step %d: code %d, waited %v, served %d; want %d, %v, %d", i, w.Code, waited, served, s.code, s.waited, s.served)
		}
	}
}

func TestNewRefusesIncompleteOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []httplimit.Options{
		{Key: httplimit.ByIP, Clock: clock.NewFake(0)},
		{Limiter: &spy{}, Clock: clock.NewFake(0)},
		{Limiter: &spy{}, Key: httplimit.ByIP},
		{Limiter: &spy{}, Key: httplimit.ByIP, Clock: clock.NewFake(0), Policy: httplimit.Fallback},
	} {
		if _, err := httplimit.New(o); !errors.Is(err, httplimit.ErrOptions) {
			t.Errorf("%+v: err = %v, want ErrOptions", o, err)
		}
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.7:5555"
	if k, err := httplimit.ByIP(r); k != "ip:192.0.2.7" || err != nil {
		t.Errorf("ByIP: %q, %v", k, err)
	}
	user := httplimit.ByUser(func(r *http.Request) string { return r.URL.Query().Get("u") })
	if k, err := user(httptest.NewRequest("GET", "/?u=gina", nil)); k != "user:gina" || err != nil {
		t.Errorf("ByUser: %q, %v", k, err)
	}
	if _, err := user(r); err == nil {
		t.Error("ByUser without a user: no error")
	}
}

// TestConcurrentRequests: at one instant, a burst of 10 admits exactly 10 of
// 40 concurrent requests, through limitdb and through the local limiter.
func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	limit := client.Throttle{MaxBurst: 9, Count: 1, Period: time.Minute}
	local, err := httplimit.NewLocal(limit.Approx(), clock.NewFake(t0.UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]httplimit.Limiter{"limitdb": remote(t, serve(t), limit), "local": local} {
		h := newHandler(t, httplimit.Options{Limiter: l})
		var wg sync.WaitGroup
		var admitted, denied atomic.Int64
		for i := 0; i < 40; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch get(h, "ivan").Code {
				case 200:
					admitted.Add(1)
				case 429:
					denied.Add(1)
				}
			}()
		}
		wg.Wait()
		if admitted.Load() != 10 || denied.Load() != 30 {
			t.Errorf("%s: %d admitted, %d denied; want 10, 30", name, admitted.Load(), denied.Load())
		}
	}
}

func TestLocalForgetsFreshKeys(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0.UnixNano())
	l, err := httplimit.NewLocal(client.Rate{Burst: 0, Interval: time.Second}, clk)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		l.Take(context.Background(), fmt.Sprint("k", i))
	}
	if l.Len() != 1000 {
		t.Fatalf("%d keys held, want 1000", l.Len())
	}
	clk.Advance(time.Second)  // every key is fresh again
	for i := 0; i < 24; i++ { // the 1024th call sweeps
		l.Take(context.Background(), "live")
	}
	if l.Len() != 1 {
		t.Fatalf("%d keys held after the sweep, want 1", l.Len())
	}
}
