package region

import (
	"io"
	"log"
	"strconv"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/policy"
)

// simRegion is one region of a simulation: its store, keyspace and Region,
// driven by the test instead of Run and TCP.
type simRegion struct {
	name  string
	store *policy.Store
	eng   *engine.Engine
	reg   *Region
}

// simBatch is a batch on its way from one region to another.
type simBatch struct {
	from, to int
	sentAt   int64
	due      int64
	args     [][]byte
}

// sim is three regions (eu, us, ap) on one fake clock exchanging their
// batches every interval with the one-way delays of RTTs 40, 80 and
// 150 ms, as Run and the links would, but in one goroutine, so a minute of
// traffic takes milliseconds: batches across a cut link are lost, and a
// link that comes back sends the full state first, as a reconnecting link
// does.
type sim struct {
	t        *testing.T
	clk      *clock.Fake
	regions  []*simRegion
	interval time.Duration
	oneWay   [3][3]time.Duration
	cut      [3]bool // region i cut off from the others
	wasCut   [3][3]bool
	inFlight []simBatch
	bound    int64 // the largest bound any region reported
}

func newSim(t *testing.T, onPartition string, p policy.Policy) *sim {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := &sim{t: t, clk: clk, interval: 50 * time.Millisecond}
	rttMs := [3][3]int{{0, 40, 80}, {40, 0, 150}, {80, 150, 0}}
	names := []string{"eu", "us", "ap"}
	for i, n := range names {
		var peers []Peer
		for j, m := range names {
			if j != i {
				peers = append(peers, Peer{Name: m, Addr: "sim"})
			}
			s.oneWay[i][j] = time.Duration(rttMs[i][j]) * time.Millisecond / 2
		}
		st := policy.NewStore(log.New(io.Discard, "", 0))
		if err := st.Set(p); err != nil {
			t.Fatal(err)
		}
		r := New(Options{Name: n, Peers: peers, Clock: clk, Logger: log.New(io.Discard, "", 0),
			Interval: func() time.Duration { return s.interval }, Timeout: func() time.Duration { return 500 * time.Millisecond },
			OnPartition: func() string { return onPartition }}, st)
		st.SetPeers(r)
		s.regions = append(s.regions, &simRegion{name: n, store: st, eng: engine.New(clk, 0), reg: r})
	}
	return s
}

// peerIndex is region j's index among region i's peers.
func peerIndex(i, j int) int {
	if j < i {
		return j
	}
	return j - 1
}

// linked reports whether batches pass between regions i and j now.
func (s *sim) linked(i, j int) bool { return !s.cut[i] && !s.cut[j] }

// tick collects every region's batch and sends it to each linked peer (the
// full state on a link that was cut), and checks for partitions.
func (s *sim) tick() {
	now := s.clk.Now()
	for i, r := range s.regions {
		dirty := r.reg.tab.TakeDirty(nil)
		for j := range s.regions {
			if j == i {
				continue
			}
			if !s.linked(i, j) {
				s.wasCut[i][j] = true
				continue
			}
			ups := dirty
			if s.wasCut[i][j] {
				ups, s.wasCut[i][j] = r.reg.tab.All(nil), false
			}
			var args [][]byte
			for _, u := range ups {
				args = append(args, []byte(u.Key), []byte(strconv.FormatInt(u.ID, 10)), []byte(strconv.FormatInt(u.Value, 10)))
			}
			s.inFlight = append(s.inFlight, simBatch{i, j, now, now + int64(s.oneWay[i][j]), args})
		}
		for _, p := range r.reg.peers {
			r.reg.checkPartition(p, now)
		}
	}
}

// deliver applies the batches due by now; those on a link cut meanwhile
// are lost.
func (s *sim) deliver() {
	now := s.clk.Now()
	kept := s.inFlight[:0]
	for _, b := range s.inFlight {
		switch {
		case b.due > now:
			kept = append(kept, b)
		case s.linked(b.from, b.to):
			to := s.regions[b.to]
			if _, err := to.reg.Push(to.eng, []byte(s.regions[b.from].name), b.sentAt, b.args); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	s.inFlight = kept
}

// run sends rate requests per second for d, share[i] of them to region i,
// one fake millisecond at a time, and returns how many each region
// admitted.
func (s *sim) run(pol, key string, rate float64, d time.Duration, share [3]float64) (admitted [3]int) {
	var owed [3]float64
	step := time.Millisecond
	for end := s.clk.Now() + int64(d); s.clk.Now() < end; {
		s.clk.Advance(step)
		s.deliver()
		if s.clk.Now()%int64(s.interval) == 0 {
			s.tick()
		}
		for i, r := range s.regions {
			owed[i] += rate * share[i] * step.Seconds()
			for ; owed[i] >= 1; owed[i]-- {
				rep, err := r.store.Hit(r.eng, []byte(pol), []byte(key), s.clk.Now(), 1)
				if err != nil {
					s.t.Fatal(err)
				}
				if !rep.Limited {
					admitted[i]++
				}
			}
			in, _ := r.store.Get(pol)
			s.bound = max(s.bound, policy.Bound(in.Policy, r.reg.Lags()))
		}
	}
	return admitted
}

func sum(a [3]int) int { return a[0] + a[1] + a[2] }

// TestSimulatedMinuteWithAPartition: a client at twice a per-minute limit,
// spread evenly over three regions, for one minute; ap is cut off from
// 25 s to 35 s. What is admitted in the minute depends on on-partition:
//
//   - fair-share: at most the limit plus the sync bound plus what the cut
//     region admits before the others call it partitioned (one peer
//     timeout at the client's rate): each side leaves the other at least
//     its share;
//   - keep-last: each side counts the other as it last heard it, so the
//     total may pass the limit (and the bound) by what one side admitted
//     unseen during the cut;
//   - local: each side admits up to the limit on its own.
//
// After the heal the regions converge within the lag (the full state
// arrives on the first batch) and admit nothing more in the minute.
func TestSimulatedMinuteWithAPartition(t *testing.T) {
	const limit = 1200
	rate := 2 * float64(limit) / 60
	even := [3]float64{1.0 / 3, 1.0 / 3, 1.0 / 3}
	totals := map[string]int{}
	for _, mode := range []string{FairShare, KeepLast, Local} {
		t.Run(mode, func(t *testing.T) {
			s := newSim(t, mode, policy.Policy{Name: "g", Algorithm: policy.FixedWindow, Limit: limit, Period: time.Minute, Global: true})
			// Start at a window's start.
			s.clk.Set((s.clk.Now()/int64(time.Minute) + 1) * int64(time.Minute))
			before := s.run("g", "client", rate, 25*time.Second, even)
			s.cut[2] = true
			during := s.run("g", "client", rate, 10*time.Second, even)
			if !s.regions[0].reg.tab.Partitioned(peerIndex(0, 2)) || s.regions[2].reg.tab.Partitioned(0) != true {
				t.Fatalf("ap not partitioned after 10 s cut off")
			}
			s.cut[2] = false
			heal := s.run("g", "client", rate, 500*time.Millisecond, even)
			after := s.run("g", "client", rate, 24*time.Second, even) // the minute's last second stays to peek at
			total := sum(before) + sum(during) + sum(heal) + sum(after)
			totals[mode] = total
			t.Logf("%s: admitted %v before, %v during the cut, %v in the heal's 500 ms, %v after: %d of %d (bound %d)",
				mode, before, during, heal, after, total, limit, s.bound)
			if sum(after) != 0 {
				t.Errorf("admitted %v more after the regions converged, with %d already admitted", after, total-sum(after))
			}
			// Every region sees the whole minute the same once converged.
			for i, r := range s.regions {
				rep, err := r.store.Hit(r.eng, []byte("g"), []byte("client"), s.clk.Now(), 0)
				if err != nil || rep.Remaining != 0 {
					t.Errorf("%s after the heal: remaining %d (%v), want 0", s.regions[i].name, rep.Remaining, err)
				}
			}
			timeoutShare := int(rate * 0.5)
			switch mode {
			case FairShare:
				if max := limit + int(s.bound) + timeoutShare; total > max {
					t.Errorf("fair-share admitted %d, more than limit %d + bound %d + %d admitted before the peer timeout", total, limit, s.bound, timeoutShare)
				}
			case KeepLast:
				unseen := min(during[2], during[0]+during[1])
				if max := limit + int(s.bound) + unseen; total > max {
					t.Errorf("keep-last admitted %d, more than limit %d + bound %d + the %d one side admitted unseen during the cut", total, limit, s.bound, unseen)
				}
			case Local:
				if total > 2*limit+int(s.bound) {
					t.Errorf("local admitted %d, more than the limit on each side", total)
				}
			}
		})
	}
	if !(totals[FairShare] <= totals[KeepLast] && totals[KeepLast] <= totals[Local]) {
		t.Errorf("admitted %v: want fair-share <= keep-last <= local", totals)
	}
}

// TestSimulatedMinuteOverAdmission is issue 34's goal as a test: with the
// default sync interval (50 ms) and RTTs of 40, 80 and 150 ms, a client
// sending at twice a per-minute limit, spread evenly over the three
// regions or 90% in one, is admitted less than 2% over the limit in the
// minute, for each windowed algorithm. It logs the figure.
func TestSimulatedMinuteOverAdmission(t *testing.T) {
	const limit = 6000 // 100 a second
	rate := 2 * float64(limit) / 60
	for _, alg := range []policy.Algorithm{policy.FixedWindow, policy.SlidingWindow} {
		for _, shape := range []struct {
			name  string
			share [3]float64
		}{{"even", [3]float64{1. / 3, 1. / 3, 1. / 3}}, {"90% in eu", [3]float64{0.9, 0.05, 0.05}}} {
			t.Run(string(alg)+"/"+shape.name, func(t *testing.T) {
				s := newSim(t, policy.KeepLast, policy.Policy{Name: "g", Algorithm: alg, Limit: limit, Period: time.Minute, Global: true})
				total := sum(s.run("g", "client", rate, time.Minute, shape.share))
				over := float64(total-limit) / limit
				t.Logf("%s %s: admitted %d of a limit of %d in the minute (%+.2f%%), reported bound %d", alg, shape.name, total, limit, 100*over, s.bound)
				if over >= 0.02 {
					t.Errorf("admitted %d, %.2f%% over the limit of %d: the goal is under 2%%", total, 100*over, limit)
				}
				if total > limit+int(s.bound) {
					t.Errorf("admitted %d, more than the limit %d plus the reported bound %d", total, limit, s.bound)
				}
			})
		}
	}
}
