package httplimit

import (
	"context"
	"errors"
	"net/http"

	"github.com/limitdb/limitdb/client"
)

// Releaser is a Limiter whose admissions hold a slot while the request
// runs (an in-flight limit): the middleware calls Release once the handler
// has returned, or panicked, with the Result Take admitted it with.
type Releaser interface {
	Limiter
	Release(ctx context.Context, key string, res client.Result) error
}

// InFlight is a Releaser that limits the requests of a key in flight at
// once through limitdb's leases: Take acquires one of Limit.Limit slots
// (CL.ACQUIRE, or RL.HIT on Policy when it is set, a concurrency policy),
// Release frees it (CL.RELEASE, RL.RELEASE). A slot whose release never
// arrives (the process died mid-request) frees itself after Limit.TTL (the
// policy's period): make it longer than the slowest request, or renew
// the lease from the handler for long ones.
type InFlight struct {
	Client *client.Client
	Limit  client.Concurrency
	Policy string
}

// Take acquires a slot for key.
func (f InFlight) Take(ctx context.Context, key string) (client.Result, error) {
	if f.Policy != "" {
		return f.Client.AcquirePolicy(ctx, f.Policy, key)
	}
	return f.Client.Acquire(ctx, key, f.Limit)
}

// Release frees the slot Take took.
func (f InFlight) Release(ctx context.Context, key string, res client.Result) error {
	if res.LeaseID == "" {
		return errNoLease
	}
	var err error
	if f.Policy != "" {
		_, err = f.Client.ReleasePolicy(ctx, f.Policy, key, res.LeaseID)
	} else {
		_, err = f.Client.Release(ctx, key, res.LeaseID)
	}
	return err
}

var errNoLease = errors.New("httplimit: an admitted in-flight request without a lease id")

// release frees what lim admitted the request with, on a context of its
// own bounded by Timeout: the request's may be cancelled by the time its
// handler returns, and the slot must be freed all the same.
func (m *Middleware) release(r *http.Request, lim Limiter, key string, res client.Result) {
	rel, ok := lim.(Releaser)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), m.o.Timeout)
	defer cancel()
	if err := rel.Release(ctx, key, res); err != nil && m.o.OnError != nil {
		m.o.OnError(r, err)
	}
}
