package command

import (
	"errors"

	"github.com/limitdb/limitdb/rls"
)

// RLS.CHARGE: how Envoy's rate limit service writes its counters. The
// service (package rls) resolves a request's descriptors to counters'
// keys and runs this command, on a LocalClient for the keys this node
// serves and on the owner's client port for the others, so that every
// charge passes the gates (ACL, key length, cluster slot ownership,
// read-only replica, maxmemory), counts in INFO commandstats and limits,
// and shows in MONITOR, as any RESP command does. Its arguments are
// rls.ChargeArgs's; its reply is rls.StatusInts integers per key
// (rls.AppendStatus).

func registerRLSCharge(t *Table) {
	rules := rls.NewRuleCache() // the table's own: two servers share nothing
	t.Register(&Command{Name: "rls.charge", Arity: -6, Flags: FlagWrite | FlagDenyOOM | FlagNoMulti,
		FirstKey: 3, LastKey: -3, Step: 3,
		Group: "rate_limit", Since: "0.1.0", Complexity: "O(N) where N is the number of keys",
		Summary: "Charges counters of Envoy's rate limit service, as the service itself does for the keys this node serves " +
			"(MODE is per_descriptor, all_or_nothing or stop_when_over_limit; RULE is UNIT:requests_per_unit:start or " +
			"UNIT:requests_per_unit:algorithm:burst, then :shadow in shadow mode): eight integers per key, " +
			"over, remaining, reset_after, total_hits, over_limit, near_limit, within_limit, shadow_mode.",
		Syntax:  "mode near_ratio key hits rule [key hits rule ...]",
		Handler: func(c *Client, args [][]byte) { cmdRLSCharge(c, args, rules) },
		Peek: func(args [][]byte) bool {
			for i := 4; i < len(args); i += 3 {
				if string(args[i]) != "0" {
					return false
				}
			}
			return true
		}})
}

func cmdRLSCharge(c *Client, args [][]byte, rules *rls.RuleCache) {
	mode, ratio, charges, err := rules.ParseChargeArgs(args[1:])
	if err != nil {
		c.Errf("%v", err)
		return
	}
	sts, err := rls.Apply(c.Engine(), charges, c.Now(), mode, ratio)
	if errors.Is(err, rls.ErrWrongType) {
		c.Err(ErrWrongType)
		return
	}
	if err != nil {
		c.Errf("%v", err)
		return
	}
	c.Array(len(sts) * rls.StatusInts)
	var buf [rls.StatusInts]int64
	for _, st := range sts {
		for _, v := range rls.AppendStatus(buf[:0], st) {
			c.Int(v)
		}
		c.CountLimit(st.Limited())
	}
}

// NewRLSClient returns a LocalClient for Envoy's rate limit service's
// charges (SetUser says as whom).
func (s *Server) NewRLSClient() *LocalClient {
	lc := s.NewLocalClient()
	lc.mu.Lock()
	lc.name = "rls"
	lc.mu.Unlock()
	lc.SetUser("")
	return lc
}

// SetUser makes lc run its commands as the ACL user user; "" is the
// server's own charges for a caller that names no user (Envoy's gRPC and
// HTTP requests), which the ACL's command rules do not restrict.
func (lc *LocalClient) SetUser(user string) {
	lc.setAuthed(true)
	lc.user, lc.internal = user, user == ""
}
