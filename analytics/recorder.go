// Package analytics is the operators' view of the limits: which keys each
// named policy and each limiter command denies most, hits most and
// brings nearest to their limit (a space-saving top-K per ranking over a
// sliding period), and each one's admitted, denied and shadow-denied
// requests per second over the last hour and per minute over the last day
// (fixed rings).
//
// It is pure data structures: time is given by the caller in Unix
// nanoseconds (the server's injected clock), and nothing here reads a
// clock, speaks a protocol or knows a command. Every structure has a fixed
// size whatever the number of keys: a tracked policy or command holds
// GroupBytes, and at most MaxGroups are tracked.
//
// It imports no package of the project.
package analytics

import (
	"hash/maphash"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Kind says what a group of decisions is named after.
type Kind uint8

const (
	Policy  Kind = iota // a named policy (RL.HIT, RL.HITALL, RL.RESERVE, RL.SETTLE)
	Command             // a limiter command (CL.THROTTLE, TB.TAKE, RLS.CHARGE, ...)
)

// Ranking is one of the three orders of a group's keys.
type Ranking uint8

const (
	Denied Ranking = iota // decisions that refused the key (for a shadow policy: would have)
	Hits                  // every decision
	Near                  // admissions that left the key at 80% or more of its limit
	numRankings
)

var rankingNames = [numRankings]string{"denied", "hits", "near"}

func (r Ranking) String() string { return rankingNames[r] }

// ParseRanking reads DENIED, HITS or NEAR, any case.
func ParseRanking(s string) (Ranking, bool) {
	for i, n := range rankingNames {
		if len(s) == len(n) && equalFold(s, n) {
			return Ranking(i), true
		}
	}
	return 0, false
}

func equalFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

// Decision is one decision as it is counted: Admitted and Denied as the
// command's or the policy's counters count it, ShadowDenied when a shadow
// policy would have refused it (Admitted too when the request went
// through), and the reply's Limit and Remaining. A decision that is
// neither admitted nor denied nor shadow-denied (a policy of RL.HITALL that
// passed while another refused) is not recorded.
type Decision struct {
	Admitted, Denied, ShadowDenied bool
	Limit, Remaining               int64
}

// near: admitted with at most a fifth of the limit left, envoyproxy/
// ratelimit's near_limit at its default ratio of 0.8.
func (d Decision) near() bool {
	return !d.Denied && !d.ShadowDenied && d.Limit > 0 && d.Remaining >= 0 && d.Remaining <= d.Limit/5
}

const (
	// Stripes is how many independently locked parts a group has; a key
	// always falls in the same one (by its hash), so the parts' rankings
	// merge exactly.
	Stripes    = 1 << stripeBits
	stripeBits = 4
	// MaxGroups is how many policies and commands are tracked at most;
	// the decisions of any beyond are counted in Dropped.
	MaxGroups = 256
	// DefaultPeriod is the top-K period unless configured otherwise.
	DefaultPeriod = time.Minute
	// GroupBytes is the memory one tracked policy or command holds, fixed
	// whatever the number of keys: Stripes stripes of 2 periods of 3
	// rankings of one Sketch each (71,584 bytes) and its History (77,832
	// bytes). MaxGroups of them are 36.5 MiB at most.
	GroupBytes = 149416
)

// stripe is a group's share of keys: its rankings for the current and the
// previous period, and the decisions of the current second not yet added
// to the group's History.
type stripe struct {
	mu     sync.Mutex
	start  int64 // the current period's start, Unix ns
	cur    uint8 // which of sk is the current period's
	sk     [2][numRankings]Sketch
	accSec int64 // the second acc counts
	acc    [3]uint64
}

type group struct {
	kind    Kind
	name    string
	stripes [Stripes]stripe
	hist    *History
}

// groups is every group by kind and name: a map keyed by the name alone,
// per kind, so that a lookup is the runtime's fast string map access.
type groups struct {
	byKind [2]map[string]*group
	n      int
}

// Recorder is every group's rankings and history. Record may be called
// from any goroutine; it takes the lock of one stripe of one group and
// never allocates once the group exists.
type Recorder struct {
	seed   maphash.Seed
	period atomic.Int64
	mu     sync.Mutex // serialises adding groups
	groups atomic.Pointer[groups]
	// recent caches groups by a cheap index of their name (recentSlot),
	// written only on a miss: a decision of a policy or command seen
	// before finds its group with one load and a compare of its name,
	// which the caller passes as the same string each time.
	recent  [16]atomic.Pointer[group]
	dropped atomic.Int64
}

// NewRecorder returns an empty recorder whose rankings cover period (see
// SetPeriod); a period of 0 or less is DefaultPeriod.
func NewRecorder(period time.Duration) *Recorder {
	r := &Recorder{seed: maphash.MakeSeed()}
	r.SetPeriod(period)
	r.groups.Store(&groups{byKind: [2]map[string]*group{{}, {}}})
	return r
}

// SetPeriod sets the top-K period p: the rankings read at an instant count
// the decisions of the period holding it (periods start at multiples of p
// since the Unix epoch) and of the one before, so between p and 2p of the
// most recent decisions. A period of 0 or less is DefaultPeriod.
func (r *Recorder) SetPeriod(p time.Duration) {
	if p <= 0 {
		p = DefaultPeriod
	}
	r.period.Store(int64(p))
}

// Period is the top-K period.
func (r *Recorder) Period() time.Duration { return time.Duration(r.period.Load()) }

// Dropped is how many decisions were not recorded because MaxGroups groups
// were tracked already.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Record records decision d on key, made at now by the policy or command
// name. key is not kept: its first KeyBytes bytes are copied.
func (r *Recorder) Record(kind Kind, name string, key []byte, now int64, d Decision) {
	if !d.Admitted && !d.Denied && !d.ShadowDenied {
		return
	}
	slot := &r.recent[recentSlot(kind, name)]
	g := slot.Load()
	if g == nil || g.name != name || g.kind != kind {
		if g = r.groups.Load().byKind[kind&1][name]; g == nil {
			if g = r.add(kind, name); g == nil {
				r.dropped.Add(1)
				return
			}
		}
		slot.Store(g)
	}
	h := maphash.Bytes(r.seed, key)
	st := &g.stripes[h>>(64-stripeBits)] // the top bits: Sketch compares all 64
	p := r.period.Load()
	st.mu.Lock()
	st.rotate(now, p)
	if sec := floorDiv(now, 1e9); sec != st.accSec {
		st.flush(g.hist)
		st.accSec = sec
	}
	sk := &st.sk[st.cur]
	sk[Hits].Add(h, key, 1)
	switch {
	case d.Denied || d.ShadowDenied:
		sk[Denied].Add(h, key, 1)
	case d.near():
		sk[Near].Add(h, key, 1)
	}
	if d.Admitted {
		st.acc[0]++
	}
	if d.Denied {
		st.acc[1]++
	}
	if d.ShadowDenied {
		st.acc[2]++
	}
	st.mu.Unlock()
}

// recentSlot is name's place in Recorder.recent.
func recentSlot(kind Kind, name string) int {
	n := len(name)
	if n == 0 {
		return int(kind) & 15
	}
	return (n*7 + int(name[0]) + int(name[n-1])*3 + int(kind)) & 15
}

// add makes the group of name, or returns nil when MaxGroups are tracked.
func (r *Recorder) add(kind Kind, name string) *group {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.groups.Load()
	if g := old.byKind[kind&1][name]; g != nil {
		return g
	}
	if old.n >= MaxGroups {
		return nil
	}
	g := &group{kind: kind, name: name, hist: newHistory()}
	next := &groups{byKind: old.byKind, n: old.n + 1}
	m := make(map[string]*group, len(old.byKind[kind&1])+1)
	for k, v := range old.byKind[kind&1] {
		m[k] = v
	}
	m[name] = g
	next.byKind[kind&1] = m
	r.groups.Store(next)
	return g
}

// rotate moves the stripe to the period holding now: the current rankings
// become the previous ones when now is in the next period, and both are
// emptied when it is later still. Time going backwards changes nothing.
func (st *stripe) rotate(now, p int64) {
	if now < st.start+p {
		return
	}
	start := now - floorMod(now, p)
	if start-st.start == p {
		st.cur ^= 1
	} else {
		for i := range st.sk[st.cur^1] {
			st.sk[st.cur^1][i].Reset()
		}
	}
	for i := range st.sk[st.cur] {
		st.sk[st.cur][i].Reset()
	}
	st.start = start
}

// flush adds the second the stripe counted to h; the stripe's lock is held.
func (st *stripe) flush(h *History) {
	if st.acc != [3]uint64{} {
		h.add(st.accSec*1e9, st.acc[0], st.acc[1], st.acc[2])
		st.acc = [3]uint64{}
	}
}

// ranking returns the stripe's entries of rk over the periods that cover
// now: the current and the previous one.
func (st *stripe) ranking(rk Ranking, now, p int64) []Entry {
	st.mu.Lock()
	defer st.mu.Unlock()
	start := now - floorMod(now, p)
	var empty Sketch
	switch {
	case st.start >= start:
		return merge(&st.sk[st.cur][rk], &st.sk[st.cur^1][rk])
	case st.start == start-p:
		return merge(&st.sk[st.cur][rk], &empty)
	}
	return nil
}

// lookup is the group of name, or nil when none was recorded.
func (r *Recorder) lookup(kind Kind, name string) *group {
	return r.groups.Load().byKind[kind&1][name]
}

// Has reports whether any decision of name was recorded.
func (r *Recorder) Has(kind Kind, name string) bool { return r.lookup(kind, name) != nil }

// Top returns the n keys of ranking rk of name with the largest counts
// over the period holding now and the one before, largest first (ties by
// key). A key's Count never underestimates and Count - Error never
// overestimates its true count; Error is at most the decisions of rk its
// stripe saw in those two periods over Slots (about the group's over
// Stripes*Slots = 128 when keys spread evenly), and 0 for a key counted
// from its first decision in both periods. Any key whose true count
// exceeds that bound is listed when n allows. ok is false when nothing of
// name was ever recorded.
func (r *Recorder) Top(kind Kind, name string, rk Ranking, n int, now int64) (top []Entry, ok bool) {
	g := r.lookup(kind, name)
	if g == nil || rk >= numRankings {
		return nil, false
	}
	return g.top(rk, n, now, r.period.Load()), true
}

func (g *group) top(rk Ranking, n int, now, p int64) []Entry {
	all := []Entry{}
	for i := range g.stripes {
		all = append(all, g.stripes[i].ranking(rk, now, p)...)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Count != all[j].Count {
			return all[i].Count > all[j].Count
		}
		return all[i].Key < all[j].Key
	})
	if n >= 0 && len(all) > n {
		all = all[:n]
	}
	return all
}

// Seconds returns name's decisions per second for the last count seconds
// up to the one holding now, oldest first; ok is false when nothing of
// name was ever recorded.
func (r *Recorder) Seconds(kind Kind, name string, now int64, count int) (points []Point, ok bool) {
	g := r.lookup(kind, name)
	if g == nil {
		return nil, false
	}
	return g.history().Seconds(now, count), true
}

// Minutes returns name's decisions per minute for the last count minutes
// up to the one holding now, oldest first; ok is false when nothing of
// name was ever recorded.
func (r *Recorder) Minutes(kind Kind, name string, now int64, count int) (points []Point, ok bool) {
	g := r.lookup(kind, name)
	if g == nil {
		return nil, false
	}
	return g.history().Minutes(now, count), true
}

// history is the group's History with every stripe's pending second
// added.
func (g *group) history() *History {
	for i := range g.stripes {
		st := &g.stripes[i]
		st.mu.Lock()
		st.flush(g.hist)
		st.mu.Unlock()
	}
	return g.hist
}

// Names lists the policies or the commands that have a record, sorted.
func (r *Recorder) Names(kind Kind) []string {
	var out []string
	for name := range r.groups.Load().byKind[kind&1] {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// ViewOptions bounds a View: Top keys per ranking (0: 10), and the last
// Seconds seconds and Minutes minutes of history (0: none; at most
// HistorySeconds and HistoryMinutes).
type ViewOptions struct {
	Top, Seconds, Minutes int
}

// View is everything the recorder holds at one instant, ready to be
// encoded as JSON: the dashboard's data.
type View struct {
	Time          int64       `json:"time"`           // Unix milliseconds of the instant read
	PeriodSeconds float64     `json:"period_seconds"` // the top-K period (SetPeriod)
	Dropped       int64       `json:"dropped"`        // decisions not recorded: past MaxGroups
	Policies      []GroupView `json:"policies"`       // by name
	Commands      []GroupView `json:"commands"`       // by name
}

// GroupView is one policy's or command's rankings and history.
type GroupView struct {
	Name    string  `json:"name"`
	Denied  []Entry `json:"denied"`
	Hits    []Entry `json:"hits"`
	Near    []Entry `json:"near"`
	Seconds []Point `json:"seconds,omitempty"` // oldest first, ending at View.Time's second
	Minutes []Point `json:"minutes,omitempty"` // oldest first, ending at View.Time's minute
}

// View reads every group at now.
func (r *Recorder) View(now int64, o ViewOptions) View {
	if o.Top <= 0 {
		o.Top = 10
	}
	v := View{Time: floorDiv(now, 1e6), PeriodSeconds: r.Period().Seconds(), Dropped: r.Dropped(),
		Policies: []GroupView{}, Commands: []GroupView{}}
	p := r.period.Load()
	for _, kind := range []Kind{Policy, Command} {
		for _, name := range r.Names(kind) {
			g := r.lookup(kind, name)
			gv := GroupView{Name: name, Denied: g.top(Denied, o.Top, now, p), Hits: g.top(Hits, o.Top, now, p), Near: g.top(Near, o.Top, now, p)}
			if o.Seconds > 0 || o.Minutes > 0 {
				h := g.history()
				if o.Seconds > 0 {
					gv.Seconds = h.Seconds(now, o.Seconds)
				}
				if o.Minutes > 0 {
					gv.Minutes = h.Minutes(now, o.Minutes)
				}
			}
			if kind == Policy {
				v.Policies = append(v.Policies, gv)
			} else {
				v.Commands = append(v.Commands, gv)
			}
		}
	}
	return v
}
