// Package httplimit is net/http middleware that rate-limits requests with
// limitdb. It owns the HTTP side: the key of a request, the RateLimit-* and
// X-RateLimit-* headers, the 429 answer, and what happens when limitdb
// cannot be reached (the failure policy). It talks to limitdb only through
// package client and never imports the server.
package httplimit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
)

// Limiter decides one request for a key.
type Limiter interface {
	Take(ctx context.Context, key string) (client.Result, error)
}

// Remote is a Limiter that applies l through limitdb, one unit per request.
type Remote struct {
	Client *client.Client
	Limit  client.Limit
}

// Take applies r.Limit to key for one unit.
func (r Remote) Take(ctx context.Context, key string) (client.Result, error) {
	return r.Client.Take(ctx, key, r.Limit, 1)
}

// FailurePolicy says what to do with a request when limitdb fails to answer
// in time. (Not to be confused with client.Policy, a named limit on the server.)
type FailurePolicy int

const (
	// FailOpen lets the request through, unlimited and without headers.
	FailOpen FailurePolicy = iota
	// FailClosed answers 503 Service Unavailable with Retry-After.
	FailClosed
	// Fallback decides with Options.Fallback, an in-process limiter (Local).
	Fallback
)

// Defaults for Options' zero fields.
const (
	DefaultTimeout  = 50 * time.Millisecond
	DefaultCooldown = time.Second
)

// Options configure the middleware. Limiter, Key and Clock are required,
// and Fallback when Policy is Fallback.
type Options struct {
	Limiter Limiter
	// Key names the client a request is charged to (see ByIP, ByHeader).
	// An error answers 400 Bad Request: the request cannot be attributed.
	Key func(*http.Request) (string, error)
	// Prefix is prepended to every key ("api:" keeps limits apart from
	// other users of the same limitdb).
	Prefix string
	// Timeout bounds each limitdb call (DefaultTimeout when 0).
	Timeout time.Duration
	// Policy applies when the call fails or times out.
	Policy   FailurePolicy
	Fallback Limiter
	// Cooldown is how long after a failure the middleware skips limitdb and
	// applies Policy directly, so that a dead limitdb costs one Timeout per
	// Cooldown instead of one per request (DefaultCooldown when 0; negative
	// disables it).
	Cooldown time.Duration
	// OnError, if set, sees every failure to reach limitdb (log it, count it).
	OnError func(r *http.Request, err error)
	// Clock times Cooldown, X-RateLimit-Reset and LB.QUEUE's wait: an
	// application passes clock.Real(), a test a clock.Fake it steps.
	Clock clock.Clock

	// Reserve, in place of Limiter, reserves an estimate before the
	// handler and settles the cost it reports (reserve.go).
	Reserve *Reservations
}

// Middleware rate-limits the handlers it wraps.
type Middleware struct {
	o         Options
	downUntil atomic.Int64 // Unix ns until which limitdb is presumed down
	wait      func(context.Context, time.Duration) error
}

// ErrOptions is returned by New for incomplete options.
var ErrOptions = errors.New("httplimit: invalid options")

// New checks o and fills its defaults.
func New(o Options) (*Middleware, error) {
	switch {
	case o.Limiter == nil && o.Reserve == nil:
		return nil, errors.Join(ErrOptions, errors.New("Limiter is required"))
	case o.Key == nil:
		return nil, errors.Join(ErrOptions, errors.New("Key is required"))
	case o.Clock == nil:
		return nil, errors.Join(ErrOptions, errors.New("Clock is required"))
	case o.Policy == Fallback && o.Fallback == nil:
		return nil, errors.Join(ErrOptions, errors.New("the Fallback policy needs a Fallback limiter"))
	case o.Policy < FailOpen || o.Policy > Fallback:
		return nil, errors.Join(ErrOptions, errors.New("unknown Policy"))
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Cooldown == 0 {
		o.Cooldown = DefaultCooldown
	}
	return &Middleware{o: o, wait: func(ctx context.Context, d time.Duration) error { return sleep(ctx, o.Clock, d) }}, nil
}

// Wrap returns next behind the limiter.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := m.o.Key(r)
		if err != nil {
			http.Error(w, "cannot rate-limit this request: "+err.Error(), http.StatusBadRequest)
			return
		}
		lim := m.o.Limiter
		var rt *reserveTaker
		if m.o.Reserve != nil {
			rt = &reserveTaker{rs: m.o.Reserve, r: r}
			lim = rt
		}
		res, by, ok := m.decide(r, lim, m.o.Prefix+key)
		if !ok {
			if m.o.Policy == FailClosed {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r) // FailOpen
			return
		}
		m.setHeaders(w.Header(), res)
		if res.Limited {
			if res.RetryAfter >= 0 {
				w.Header().Set("Retry-After", strconv.FormatInt(ceilSeconds(res.RetryAfter), 10))
			}
			http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
			return
		}
		// LB.QUEUE admits a request into a queue: it runs after its Delay,
		// unless the client gives up first.
		if res.Delay > 0 && m.wait(r.Context(), res.Delay) != nil {
			return
		}

		// An in-flight limit's slot is freed when the handler returns,
		// and when it panics (the deferred call runs as the panic unwinds).
		defer m.release(r, by, m.o.Prefix+key, res)

		if rt != nil && rt.res != nil {
			m.serveReserved(w, r, next, rt)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sleep waits d on clk or until ctx is done.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	select {
	case <-clk.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// decide asks limitdb (through lim), or the fallback while limitdb is
// failing, and returns which of them decided. ok is false when there is no
// decision and FailOpen/FailClosed applies.
func (m *Middleware) decide(r *http.Request, lim Limiter, key string) (client.Result, Limiter, bool) {
	now := m.o.Clock.Now()
	if now >= m.downUntil.Load() {
		ctx, cancel := context.WithTimeout(r.Context(), m.o.Timeout)
		res, err := lim.Take(ctx, key)
		cancel()
		if err == nil {
			return res, lim, true
		}
		if m.o.Cooldown > 0 {
			m.downUntil.Store(now + int64(m.o.Cooldown))
		}
		if m.o.OnError != nil {
			m.o.OnError(r, err)
		}
	}
	if m.o.Policy != Fallback {
		return client.Result{}, nil, false
	}
	res, err := m.o.Fallback.Take(r.Context(), key)
	if err != nil {
		if m.o.OnError != nil {
			m.o.OnError(r, err)
		}
		return client.Result{}, nil, false // a broken fallback fails open
	}
	return res, m.o.Fallback, true
}

// setHeaders writes the IETF draft's RateLimit-* fields (Reset in seconds
// from now) and the older X-RateLimit-* ones (Reset as a Unix time in
// seconds, as GitHub and most APIs send it).
func (m *Middleware) setHeaders(h http.Header, res client.Result) {
	limit := strconv.FormatInt(res.Limit, 10)
	remaining := strconv.FormatInt(res.Remaining, 10)
	reset := ceilSeconds(res.ResetAfter)
	h.Set("RateLimit-Limit", limit)
	h.Set("RateLimit-Remaining", remaining)
	h.Set("RateLimit-Reset", strconv.FormatInt(reset, 10))
	h.Set("X-RateLimit-Limit", limit)
	h.Set("X-RateLimit-Remaining", remaining)
	h.Set("X-RateLimit-Reset", strconv.FormatInt(clock.Time(m.o.Clock).Unix()+reset, 10))
}

// ceilSeconds rounds d up to whole seconds, so a client that waits that long
// is never early.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// ByIP keys a request by the IP address of its TCP peer (RemoteAddr). Behind
// a proxy, key by the header the proxy sets instead (ByHeader), and only if
// the proxy overwrites it.
func ByIP(r *http.Request) (string, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return "", err
	}
	return "ip:" + host, nil
}

// ByHeader keys a request by a header's value (an API key, a user id set by
// an authenticating proxy); a request without it is refused with 400.
func ByHeader(name string) func(*http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		v := r.Header.Get(name)
		if v == "" {
			return "", errors.New("no " + name + " header")
		}
		return name + ":" + v, nil
	}
}

// ByUser keys a request by the user the application has authenticated;
// user returns "" for an anonymous request, which is refused with 400 (wrap
// it in your own function to key anonymous requests by IP instead).
func ByUser(user func(*http.Request) string) func(*http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		u := user(r)
		if u == "" {
			return "", errors.New("no authenticated user")
		}
		return "user:" + u, nil
	}
}
