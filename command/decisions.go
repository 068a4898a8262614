package command

import (
	"github.com/limitdb/limitdb/analytics"
	"github.com/limitdb/limitdb/engine/limit"
)

// Limiter decisions with the keys they were made on, for whoever watches
// them (the analytics family): every limiter command reports its
// decisions through Client.Limit or Client.ObserveLimit, and the named
// policies through the forwarder PolicyDecisions gives the family that
// applies them, so RESP, scripts' redis.call and Envoy's rate limit
// service (whose charges run RLS.CHARGE) are seen alike. With nobody
// watching, a decision costs one atomic load.

// DecisionObserver sees every limiter decision as it is made, on the
// goroutine that made it: it must be cheap, never block, and not keep key,
// which aliases the request.
type DecisionObserver interface {
	// ObserveCommand: the limiter command cmd (its table name) decided
	// d on key at now (Unix ns, the batch's instant).
	ObserveCommand(cmd string, key []byte, now int64, d analytics.Decision)
	// ObservePolicy: the named policy decided d on the client's key.
	ObservePolicy(policy string, key []byte, now int64, d analytics.Decision)
}

type decisionObserver struct{ o DecisionObserver }

// ObserveDecisions makes o see every limiter decision, or with nil stops
// it; any goroutine may call it.
func (t *Table) ObserveDecisions(o DecisionObserver) {
	if o == nil {
		t.decisions.Store(nil)
		return
	}
	t.decisions.Store(&decisionObserver{o})
}

// PolicyForwarder hands a policy's decisions to the table's
// DecisionObserver, if any: what a family gives the policies it applies
// (policy.Store.SetObserver) without knowing who watches.
type PolicyForwarder struct{ t *Table }

// PolicyDecisions is the forwarder of t's policy decisions.
func (t *Table) PolicyDecisions() PolicyForwarder { return PolicyForwarder{t} }

// ObservePolicy implements policy.Observer.
func (f PolicyForwarder) ObservePolicy(policy string, key []byte, now int64, d analytics.Decision) {
	if o := f.t.decisions.Load(); o != nil {
		o.o.ObservePolicy(policy, key, now, d)
	}
}

// ObserveLimit reports the running command's decision d on key to the
// table's DecisionObserver. It counts nothing in INFO limits (CountLimit
// does): a command that counts one decision over several keys
// (RL.HITALL) reports each key.
func (c *Client) ObserveLimit(key []byte, d analytics.Decision) {
	o := c.srv.table.decisions.Load()
	if o == nil || c.bt.run == nil {
		return
	}
	o.o.ObserveCommand(c.bt.run.Name, key, c.Now(), d)
}

// CountLimitOn counts r in INFO limits against the running command and
// reports it on key to the table's DecisionObserver.
func (c *Client) CountLimitOn(key []byte, r limit.Result) {
	c.CountLimit(r.Limited)
	if o := c.srv.table.decisions.Load(); o != nil && c.bt.run != nil {
		o.o.ObserveCommand(c.bt.run.Name, key, c.Now(), Decided(r.Limited, r.Limit, r.Remaining))
	}
}

// Decided is a limiter command's decision: admitted or limited, with its
// reply's limit and remaining.
func Decided(limited bool, lim, remaining int64) analytics.Decision {
	return analytics.Decision{Admitted: !limited, Denied: limited, Limit: lim, Remaining: remaining}
}
