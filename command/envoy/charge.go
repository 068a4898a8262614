package envoy

import (
	"bytes"
	"errors"

	"github.com/limitdb/limitdb/analytics"

	"github.com/limitdb/limitdb/command"
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

func (f *Family) registerCharge(t *command.Table) {
	t.Register(&command.Command{Name: "rls.charge", Arity: -6, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagNoMulti,
		FirstKey: 3, LastKey: -3, Step: 3,
		Group: "rate_limit", Since: "0.1.0", Complexity: "O(N) where N is the number of keys",
		Summary: "Charges counters of Envoy's rate limit service, as the service itself does for the keys this node serves " +
			"(MODE is per_descriptor, all_or_nothing or stop_when_over_limit; RULE is UNIT:requests_per_unit:start or " +
			"UNIT:requests_per_unit:algorithm:burst, then :shadow in shadow mode): eight integers per key, " +
			"over, remaining, reset_after, total_hits, over_limit, near_limit, within_limit, shadow_mode.",
		Syntax:  "mode near_ratio key hits rule [key hits rule ...]",
		Handler: f.cmdCharge,
		Peek: func(args [][]byte) bool {
			for i := 4; i < len(args); i += 3 {
				if string(args[i]) != "0" {
					return false
				}
			}
			return true
		}})
}

func (f *Family) cmdCharge(c *command.Client, args [][]byte) {
	mode, ratio, charges, err := f.rules.ParseChargeArgs(args[1:])
	if err != nil {
		c.Errf("%v", err)
		return
	}
	sts, err := rls.Apply(c.Engine(), charges, c.Now(), mode, ratio)
	if errors.Is(err, rls.ErrWrongType) {
		c.Err(command.ErrWrongType)
		return
	}
	if err != nil {
		c.Errf("%v", err)
		return
	}
	writeStatuses(c, charges, sts)
}

// writeStatuses answers sts, counting each in INFO limits and the
// analytics; apart from cmdCharge so that its buffer is not on the stack
// while the charge runs.
func writeStatuses(c *command.Client, charges []rls.Charge, sts []rls.Status) {
	c.Array(len(sts) * rls.StatusInts)
	var buf [rls.StatusInts]int64
	for i := range sts {
		st := &sts[i]
		for _, v := range rls.AppendStatus(buf[:0], *st) {
			c.Int(v)
		}
		c.CountLimit(st.Limited())
		c.ObserveLimit(clientKey(charges[i].Key), decision(*st, charges[i].Limit))
	}
}

// clientKey is a counter's key without what changes while the client stays
// the same: the window's start (domain_key_value_..._start) or the
// algorithm's name, so that the analytics rank one key per client and rule.
func clientKey(k []byte) []byte {
	if i := bytes.LastIndexByte(k, '_'); i > 0 {
		return k[:i]
	}
	return k
}

// decision is a status as the analytics see it: a shadow mode rule's
// would-be denial is admitted and shadow-denied.
func decision(st rls.Status, l *rls.RateLimit) analytics.Decision {
	d := command.Decided(st.Limited(), 0, int64(st.Remaining))
	if l != nil {
		d.Limit = int64(l.RequestsPerUnit)
		d.ShadowDenied = st.Over && l.ShadowMode
	}
	return d
}
