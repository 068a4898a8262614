// Package ratelimit is the family of rate-limit commands, limitdb's
// product: CL.THROTTLE and GCRA, the token and leaky buckets, the fixed
// and sliding windows, the sliding log, and the named policies (RL.HIT,
// RL.HITALL, RL.POLICY) with their rules file. It owns the policies and
// registers its commands, its INFO limits lines and its snapshot section
// on the table it is handed; it is the template every family follows.
//
// It imports the command core, the engine and policy; never another
// family, the transport or the assembly.
package ratelimit

import (
	"fmt"

	"strings"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/policy"
)

// Family is the rate-limit commands and the named policies they apply.
type Family struct {
	policies  *policy.Store
	env       command.Env
	replicate func(name string, save func() ([]byte, error))

	calendars calendars // the window commands' resolved calendars (calendar.go)
}

// New returns the family with no policies yet.
func New() *Family { return &Family{policies: policy.NewStore(nil)} }

// Register adds the family's commands, its INFO limits lines, its
// snapshot section and its share of CONFIG RESETSTAT to t.
func (f *Family) Register(t *command.Table, env command.Env) {
	f.env = env
	f.policies.SetObserver(t.PolicyDecisions())
	f.replicate = env.ReplicateSection
	registerGcra(t)
	f.registerLimiters(t)
	f.registerPolicy(t)

	f.registerReserve(t)

	f.registerLeases(t)

	t.ExtendInfo("limits", func(_ *engine.Engine, b *strings.Builder) { f.policies.AppendInfo(b) })
	t.AddSection("policies", f.policies.MarshalRuntime, f.policies.UnmarshalRuntime)
	t.OnResetStat(f.policies.ResetCounters)
}

// Policies is the named policies the family applies.
func (f *Family) Policies() *policy.Store { return f.policies }

// StartRules loads the configured rules file (if any) and watches it on the
// engine's clock until the command layer closes. A missing or broken file
// at start-up is an error: the server should refuse to start rather than
// run without its limits.
func (f *Family) StartRules() error {
	cfg := f.env.Config()
	if cfg.Rules == "" {
		return nil
	}
	ps := f.policies
	ps.SetLogger(f.env.Logger)
	if err := ps.LoadRules(cfg.Rules); err != nil {
		return fmt.Errorf("rules file not loaded: %w", err)
	}
	go func() {
		ps.Watch(f.env.Done, cfg.RulesPollOrDefault(), f.env.Clock)
		ps.StopRules(cfg.Rules)
	}()
	return nil
}
