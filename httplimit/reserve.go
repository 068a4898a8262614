package httplimit

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/client"
)

// Reservations make the middleware charge a cost known only once the
// handler has run (the tokens of a language model's answer): it reserves
// an estimate on a named policy before the handler (RL.RESERVE), and
// settles the cost the handler reports with ReportCost once it returns
// (RL.SETTLE), giving back or charging the difference. A handler that
// reports nothing is settled at the estimate. Set Options.Reserve instead
// of Options.Limiter; the failure policy applies to the reservation as to
// any decision.
type Reservations struct {
	Client *client.Client
	Policy string
	// Estimate is the cost to reserve for a request; 1 when nil.
	Estimate func(*http.Request) int64
	// TTL is how long a reservation stays open if never settled (the
	// handler's process died): 0 for the server's default, five minutes.
	TTL time.Duration
}

// costKey is the context key of a request's cost report.
type costKey struct{}

// ReportCost tells the middleware the real cost of the request whose
// context ctx is, to settle its reservation with once the handler
// returns. It does nothing outside a reserving middleware.
func ReportCost(ctx context.Context, cost int64) {
	if c, ok := ctx.Value(costKey{}).(*atomic.Int64); ok {
		c.Store(cost)
	}
}

// reserveTaker adapts Reservations to the Limiter a decision runs.
type reserveTaker struct {
	rs  *Reservations
	r   *http.Request
	res *client.Reservation
	est int64
}

func (t *reserveTaker) Take(ctx context.Context, key string) (client.Result, error) {
	t.est = 1
	if t.rs.Estimate != nil {
		t.est = t.rs.Estimate(t.r)
	}
	res, rv, err := t.rs.Client.Reserve(ctx, t.rs.Policy, key, t.est, t.rs.TTL)
	t.res = rv
	return res, err
}

// serveReserved runs next with a cost report in its context and settles
// the reservation with what it reported; the settle gets a Timeout of its
// own, apart from the request's context, which may be over by then.
func (m *Middleware) serveReserved(w http.ResponseWriter, r *http.Request, next http.Handler, t *reserveTaker) {
	cost := new(atomic.Int64)
	cost.Store(t.est)
	next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), costKey{}, cost)))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), m.o.Timeout)
	defer cancel()
	if _, _, err := t.rs.Client.Settle(ctx, *t.res, cost.Load()); err != nil && m.o.OnError != nil {
		m.o.OnError(r, err)
	}
}
