// Package analytics is the family of the operators' view of the limits:
// RL.TOP (the keys each policy and limiter command denies most, hits most
// and brings nearest to their limit) and RL.HISTORY (admitted, denied and
// shadow-denied per second over the last hour and per minute over the last
// day), the analytics and analytics-period directives, its INFO limits
// lines, and DashboardView, the whole view for a dashboard.
//
// It owns a recorder (package analytics, the data structures) and feeds it
// every limiter decision the command layer reports
// (command.Table.ObserveDecisions): the limiter commands' through
// Client.Limit and Client.ObserveLimit, the named policies' through the
// policy store's observer, so RESP, scripts' redis.call and Envoy's rate
// limit service (its charges run RLS.CHARGE) are recorded alike.
//
// It imports the command core and package analytics; never another
// family, the transport or the assembly.
package analytics

import (
	"fmt"
	"strings"
	"sync/atomic"

	an "github.com/limitdb/limitdb/analytics"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// Family is RL.TOP, RL.HISTORY and the recorder behind them.
type Family struct {
	env   command.Env
	table *command.Table
	rec   atomic.Pointer[an.Recorder] // nil while analytics is off
}

// New returns the family; what it records follows the analytics directive.
func New() *Family { return &Family{} }

// Register adds RL.TOP and RL.HISTORY, the analytics lines of INFO limits
// and the reload of the analytics directives to t, and starts recording
// when analytics is on.
func (f *Family) Register(t *command.Table, env command.Env) {
	f.env, f.table = env, t
	t.Register(
		&command.Command{Name: "rl.top", Arity: -2, MaxArgs: 5, Flags: command.FlagReadonly | command.FlagLoading | command.FlagStale,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(1): at most 2 x 128 keys are read per ranking",
			Summary: "The keys a named policy or limiter command denied (default), hit or left near their limit (80% used or more) most " +
				"over the last one to two analytics-periods on this node: [[key, count, error], ...], count largest first; " +
				"the true count is between count - error and count.",
			Syntax: "name [DENIED|HITS|NEAR] [COUNT count]", Handler: f.cmdTop},
		&command.Command{Name: "rl.history", Arity: -2, MaxArgs: 5, Flags: command.FlagReadonly | command.FlagLoading | command.FlagStale,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(N) where N is the count",
			Summary: "A named policy's or limiter command's decisions on this node per second (last hour, default) or per minute " +
				"(last day), oldest first: [[unix_time, admitted, denied, shadow_denied], ...]; COUNT defaults to 60.",
			Syntax: "name [SECONDS|MINUTES] [COUNT count]", Handler: f.cmdHistory},
	)
	t.ExtendInfo("limits", f.info)
	t.OnReload(config.ReloadAnalytics, f.apply)
	f.apply()
}

// apply starts, stops or re-periods the recorder as the configuration
// says. Turning analytics off forgets what was recorded.
func (f *Family) apply() error {
	cfg := f.env.Config()
	if !cfg.Analytics {
		f.table.ObserveDecisions(nil)
		f.rec.Store(nil)
		return nil
	}
	r := f.rec.Load()
	if r == nil {
		r = an.NewRecorder(cfg.AnalyticsPeriodOrDefault())
		f.rec.Store(r)
	} else {
		r.SetPeriod(cfg.AnalyticsPeriodOrDefault())
	}
	f.table.ObserveDecisions(observer{r})
	return nil
}

// observer feeds a recorder the command layer's decisions.
type observer struct{ r *an.Recorder }

func (o observer) ObserveCommand(cmd string, key []byte, now int64, d an.Decision) {
	o.r.Record(an.Command, cmd, key, now, d)
}

func (o observer) ObservePolicy(policy string, key []byte, now int64, d an.Decision) {
	o.r.Record(an.Policy, policy, key, now, d)
}

// errOff is RL.TOP's and RL.HISTORY's answer while analytics is off.
const errOff = "ERR analytics is off: CONFIG SET analytics yes starts recording"

// resolve finds what name ranks: a policy of that name, else the limiter
// command (any case).
func resolve(r *an.Recorder, name []byte) (an.Kind, string) {
	if r.Has(an.Policy, string(name)) {
		return an.Policy, string(name)
	}
	return an.Command, strings.ToLower(string(name))
}

// cmdTop answers RL.TOP name [DENIED|HITS|NEAR] [COUNT n].
func (f *Family) cmdTop(c *command.Client, args [][]byte) {
	rk, count := an.Denied, int64(10)
	seenRanking := false
	for i := 2; i < len(args); i++ {
		switch {
		case command.EqualFold(args[i], "count") && i+1 < len(args):
			n, err := command.ParseAtLeast(args[i+1], 0, "count")
			if err != nil {
				c.Error(err)
				return
			}
			count = n
			i++
		default:
			r, ok := an.ParseRanking(string(args[i]))
			if !ok || seenRanking {
				c.Error(command.ErrSyntax)
				return
			}
			rk, seenRanking = r, true
		}
	}
	r := f.rec.Load()
	if r == nil {
		c.Err(errOff)
		return
	}
	kind, name := resolve(r, args[1])
	top, _ := r.Top(kind, name, rk, int(min(count, an.Stripes*an.Slots)), c.Now())
	c.Array(len(top))
	for _, e := range top {
		c.Array(3)
		if e.Truncated {
			c.BulkString(e.Key + "...")
		} else {
			c.BulkString(e.Key)
		}
		c.Int(int64(e.Count))
		c.Int(int64(e.Error))
	}
}

// cmdHistory answers RL.HISTORY name [SECONDS|MINUTES] [COUNT n].
func (f *Family) cmdHistory(c *command.Client, args [][]byte) {
	minutes, count, seenStep := false, int64(60), false
	for i := 2; i < len(args); i++ {
		switch {
		case command.EqualFold(args[i], "count") && i+1 < len(args):
			n, err := command.ParseAtLeast(args[i+1], 1, "count")
			if err != nil {
				c.Error(err)
				return
			}
			count = n
			i++
		case !seenStep && command.EqualFold(args[i], "seconds"):
			seenStep = true
		case !seenStep && command.EqualFold(args[i], "minutes"):
			minutes, seenStep = true, true
		default:
			c.Error(command.ErrSyntax)
			return
		}
	}
	most := int64(an.HistorySeconds)
	if minutes {
		most = an.HistoryMinutes
	}
	if count > most {
		c.Errf("count must be at most %d for %s, got %d", most, map[bool]string{false: "SECONDS", true: "MINUTES"}[minutes], count)
		return
	}
	r := f.rec.Load()
	if r == nil {
		c.Err(errOff)
		return
	}
	kind, name := resolve(r, args[1])
	var points []an.Point
	if minutes {
		points, _ = r.Minutes(kind, name, c.Now(), int(count))
	} else {
		points, _ = r.Seconds(kind, name, c.Now(), int(count))
	}
	c.Array(len(points))
	for _, p := range points {
		c.Array(4)
		c.Int(p.Time)
		c.Int(int64(p.Admitted))
		c.Int(int64(p.Denied))
		c.Int(int64(p.ShadowDenied))
	}
}

// info adds the analytics' lines to INFO limits.
func (f *Family) info(_ *engine.Engine, b *strings.Builder) {
	r := f.rec.Load()
	command.InfoLine(b, "analytics_enabled", command.InfoBool(r != nil))
	if r == nil {
		return
	}
	groups := len(r.Names(an.Policy)) + len(r.Names(an.Command))
	command.InfoLine(b, "analytics_period", fmt.Sprint(r.Period().Seconds()))
	command.InfoLine(b, "analytics_tracked", groups)
	command.InfoLine(b, "analytics_memory_bytes", groups*an.GroupBytes)
	command.InfoLine(b, "analytics_dropped", r.Dropped())
}

// Dashboard is the whole operators' view of one node's limits, ready to be
// encoded as JSON: whether analytics is on and, when it is, every tracked
// policy's and limiter command's top keys (denied, hits, near) and
// history (analytics.View).
type Dashboard struct {
	Enabled bool `json:"enabled"`
	an.View
}

// DashboardView reads the whole view at the server's clock's now, bounded
// by o (top keys per ranking, seconds and minutes of history); any
// goroutine may call it. It is what a dashboard page or a metrics exporter
// serves.
func (f *Family) DashboardView(o an.ViewOptions) Dashboard {
	r := f.rec.Load()
	if r == nil {
		return Dashboard{View: an.View{Policies: []an.GroupView{}, Commands: []an.GroupView{}}}
	}
	return Dashboard{Enabled: true, View: r.View(f.env.Clock.Now(), o)}
}
