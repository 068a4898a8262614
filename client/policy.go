package client

import (
	"context"
	"fmt"
	"time"
)

// Policy is RL.HIT name key [cost]: a named policy the server defines (in
// its rules file or with RL.POLICY SET), answered in milliseconds. The
// client does not know the policy's rule, so Local says what a local
// stand-in limiter should enforce (Approx returns it).
type Policy struct {
	Name  string
	Local Rate
}

func (p Policy) Approx() Rate      { return p.Local }
func (Policy) unit() time.Duration { return time.Millisecond }
func (p Policy) args(key string, cost int64) ([]any, error) {
	return []any{"RL.HIT", p.Name, key, cost}, nil
}

// Pair is one (policy, key) of an RL.HITALL call.
type Pair struct {
	Policy, Key string
}

// HitAll is RL.HITALL: it charges cost to every pair, all or nothing. It
// answers whether the call was denied (then nothing was charged) and each
// pair's Result, in order.
func (c *Client) HitAll(ctx context.Context, cost int64, pairs ...Pair) (limited bool, results []Result, err error) {
	args := make([]any, 0, 4+2*len(pairs))
	args = append(args, "RL.HITALL", len(pairs))
	for _, p := range pairs {
		args = append(args, p.Policy, p.Key)
	}
	args = append(args, "COST", cost)
	v, err := c.rdb.Do(ctx, args...).Slice()
	if err != nil {
		return false, nil, err
	}
	if len(v) != 1+len(pairs) {
		return false, nil, fmt.Errorf("%w: RL.HITALL answered %d fields for %d pairs", ErrReply, len(v), len(pairs))
	}
	flag, ok := v[0].(int64)
	if !ok {
		return false, nil, fmt.Errorf("%w: RL.HITALL's first field is %T", ErrReply, v[0])
	}
	results = make([]Result, len(pairs))
	for i, x := range v[1:] {
		arr, ok := x.([]any)
		if !ok {
			return false, nil, fmt.Errorf("%w: RL.HITALL pair %d is %T", ErrReply, i, x)
		}

		if len(arr) == 6 {
			if _, lease := arr[5].(int64); !lease { // a concurrency policy's lease id
				if results[i], err = decodeLeaseFields(arr); err != nil {
					return false, nil, err
				}
				continue
			}
		}

		ns := make([]int64, len(arr))
		for j, n := range arr {
			if ns[j], ok = n.(int64); !ok {
				return false, nil, fmt.Errorf("%w: RL.HITALL pair %d field %d is %T", ErrReply, i, j, n)
			}
		}
		if results[i], err = decode(ns, time.Millisecond); err != nil {
			return false, nil, err
		}
	}
	return flag == 1, results, nil
}
