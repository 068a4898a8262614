package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/redis/go-redis/v9"
)

// The near cache keeps denials that are certain to hold and answers them
// without a round trip.
//
// Why a denial is certain. Under GCRA (CL.THROTTLE, GCRA, a gcra policy) a
// key's state is one instant, its theoretical arrival time (TAT); a
// request of cost c is denied while now < TAT + c*T - τ, and a denial
// charges nothing. Under a token bucket (TB.TAKE, a token_bucket policy) a
// request of cost c is denied while the bucket holds fewer than c tokens,
// and tokens only grow with time. Other requests for the key can only move
// the TAT later or take tokens away, which makes a denial last longer. So
// a denial of cost c answered with retry_after r stays a denial for every
// cost >= c until r has passed: the client can give it without asking.
//
// The wire rounds r up to its unit (a second for CL.THROTTLE and GCRA, a
// millisecond for the rest), so the exact wait lies within one unit below
// r, and the cache keeps a denial for r minus one unit. Time is measured
// from before the request was sent, which is no later than the instant the
// server decided; a locally answered request is decided as of the instant
// it is asked.
//
// What breaks the certainty, so the cache forgets: the key deleted or the
// policy changed. The client's own Reset, SetPolicy and DeletePolicy
// forget the entries they affect; a DEL, FLUSHALL or policy change made by
// another client or an operator is not seen, and its effect reaches this
// client's answers when the cached denials expire (at most their
// retry_after). A policy's algorithm is read with RL.POLICY GET the first
// time one of its denials could be kept and again every policyKindTTL; a
// policy the client may not read (ACL) is never cached.

// policyKindTTL is how long the near cache trusts a policy's algorithm as
// it last read it.
const policyKindTTL = 10 * time.Second

// maxNearEntries bounds the near cache: past it, expired entries are swept
// and, if it is still full, new denials are not kept.
const maxNearEntries = 1 << 16

// sweepNearEvery is how many stored denials pass between sweeps of the
// expired ones.
const sweepNearEvery = 1024

// nearKey names a cached denial: the limit, with its parameters, and the key.
type nearKey struct {
	l   Limit
	key string
}

// denial is a cached denial.
type denial struct {
	cost  int64
	sent  time.Duration // clk.Mono() before the request was sent
	until time.Duration // on clk.Mono(): the denial holds before it
	res   Result
}

// policyKind is what the cache last read of a policy.
type policyKind struct {
	cacheable bool          // gcra or token_bucket
	read      time.Duration // clk.Mono() when read
}

type nearCache struct {
	clk clock.Clock

	mu       sync.Mutex
	denials  map[nearKey]denial
	policies map[string]policyKind
	stored   int
	// forgets counts the forget calls, so that a denial asked for before
	// one and answered after it is not kept: the key may have been reset
	// in between.
	forgets int64

	answered, asked atomic.Int64
}

func newNearCache(clk clock.Clock) *nearCache {
	return &nearCache{clk: clk, denials: map[nearKey]denial{}, policies: map[string]policyKind{}}
}

// nearLimit is the cache's name for l, or false when l's denials are never
// certain: the window limits, the leaky queue (an admitted request waits,
// so its reply is not a plain denial) and concurrency limits. A policy is
// named without its Local rate, which the server never sees.
func nearLimit(l Limit) (Limit, bool) {
	switch l := l.(type) {
	case Throttle, GCRA, TokenBucket:
		return l, true
	case Policy:
		return Policy{Name: l.Name}, true
	}
	return nil, false
}

// lookup answers a request of cost for key under l from a cached denial,
// as of now (clk.Mono()): Limited, Limit and Remaining as the server last
// answered, RetryAfter and ResetAfter counted down by the time since it was
// asked. When it cannot, it returns the forget count to pass to store.
func (n *nearCache) lookup(l Limit, key string, cost int64, now time.Duration) (Result, int64, bool) {
	n.mu.Lock()
	forgets := n.forgets
	d, ok := n.denials[nearKey{l, key}]
	if ok && now >= d.until {
		delete(n.denials, nearKey{l, key})
		ok = false
	}
	n.mu.Unlock()
	if !ok || cost < d.cost {
		n.asked.Add(1)
		return Result{}, forgets, false
	}
	n.answered.Add(1)
	elapsed := now - d.sent
	r := d.res
	r.RetryAfter -= elapsed
	r.ResetAfter = max(r.ResetAfter-elapsed, 0)
	return r, forgets, true
}

// store keeps res, the server's answer to a request of cost for key under
// l sent at sent, when it is a denial certain to hold and nothing was
// forgotten since lookup counted forgets; policy kinds are read through
// rdb.
func (n *nearCache) store(ctx context.Context, rdb Doer, l Limit, key string, cost int64, sent time.Duration, forgets int64, res Result) {
	unit := l.unit()
	if !res.Limited || cost < 1 || res.RetryAfter <= unit {
		return // admitted, a peek, can never fit (Never), or no certain wait after rounding
	}
	if p, ok := l.(Policy); ok && !n.policyCacheable(ctx, rdb, p.Name) {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.forgets != forgets {
		return
	}
	if n.stored++; n.stored%sweepNearEvery == 0 || len(n.denials) >= maxNearEntries {
		now := n.clk.Mono()
		for k, d := range n.denials {
			if now >= d.until {
				delete(n.denials, k)
			}
		}
	}
	if len(n.denials) >= maxNearEntries {
		return
	}
	n.denials[nearKey{l, key}] = denial{cost: cost, sent: sent, until: sent + res.RetryAfter - unit, res: res}
}

// policyCacheable reports whether policy name is a gcra or token_bucket
// one, reading it with RL.POLICY GET when the cache has not read it within
// policyKindTTL.
func (n *nearCache) policyCacheable(ctx context.Context, rdb Doer, name string) bool {
	now := n.clk.Mono()
	n.mu.Lock()
	k, ok := n.policies[name]
	n.mu.Unlock()
	if ok && now-k.read < policyKindTTL {
		return k.cacheable
	}
	algorithm, err := policyAlgorithm(ctx, rdb, name)
	if err != nil && ctx.Err() != nil {
		return false // the caller gave up: read it next time
	}
	k = policyKind{cacheable: err == nil && (algorithm == "gcra" || algorithm == "token_bucket"), read: now}
	n.mu.Lock()
	n.policies[name] = k // a forgetPolicy meanwhile makes store drop the denial
	n.mu.Unlock()
	return k.cacheable
}

// policyAlgorithm reads a policy's algorithm from RL.POLICY GET's reply, a
// map in RESP3 and a flat list of fields and values in RESP2.
func policyAlgorithm(ctx context.Context, rdb Doer, name string) (string, error) {
	v, err := rdb.Do(ctx, "RL.POLICY", "GET", name).Result()
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case map[any]any:
		if a, ok := v["algorithm"].(string); ok {
			return a, nil
		}
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			if f, _ := v[i].(string); f == "algorithm" {
				if a, ok := v[i+1].(string); ok {
					return a, nil
				}
			}
		}
	}
	return "", redis.Nil
}

// drop forgets the denial kept for key under l, if any.
func (n *nearCache) drop(l Limit, key string) {
	n.mu.Lock()
	delete(n.denials, nearKey{l, key})
	n.mu.Unlock()
}

// forgetKey drops key's cached denials: under the explicit limits, which
// keep their state at key itself, or under policy (a non-empty name).
func (n *nearCache) forgetKey(key, policy string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.forgets++
	for k := range n.denials {
		if k.key != key {
			continue
		}
		if p, ok := k.l.(Policy); ok == (policy != "") && (!ok || p.Name == policy) {
			delete(n.denials, k)
		}
	}
}

// forgetPolicy drops policy name's cached denials and its algorithm.
func (n *nearCache) forgetPolicy(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.forgets++
	delete(n.policies, name)
	for k := range n.denials {
		if p, ok := k.l.(Policy); ok && p.Name == name {
			delete(n.denials, k)
		}
	}
}

// forgetAll empties the cache.
func (n *nearCache) forgetAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.forgets++
	clear(n.denials)
	clear(n.policies)
}
