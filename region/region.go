// Package region shares global policies (scope: global) between regions,
// each one limitdb deployment (docs/global.md). Every region admits
// locally, against its own state and the last counts it heard from each
// peer; every region-sync-interval it sends each peer the slots that
// changed (policy.Slot: per key, per window or bucket state, this region's
// consumed cost), as RGN.PUSH over the peer's client port, with AUTH and
// TLS. Slots merge by taking the larger, so lost, repeated or reordered
// batches never count twice; a peer that reconnects is sent the full state.
// A peer silent longer than region-peer-timeout is partitioned and counted
// as on-partition says.
//
// region implements policy.Peers; it imports the engine, policy and the
// clock, never the command layer, the transport or the configuration.
package region

import (
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/redisarg"
	"github.com/limitdb/limitdb/policy"
)

// Peer is a peer region: its name and its client port's address.
type Peer struct{ Name, Addr string }

// The on-partition policies: what a partitioned peer's counts are taken to
// be.
const (
	KeepLast  = policy.KeepLast  // the last counts heard
	FairShare = policy.FairShare // at least the policy's limit / regions
	Local     = policy.LocalOnly // nothing: this region's limit alone
)

// Options configure a Region. The functions are read each time they are
// needed, so CONFIG SET takes effect at the next interval.
type Options struct {
	Name        string
	Peers       []Peer
	Interval    func() time.Duration
	Timeout     func() time.Duration
	OnPartition func() string
	Dial        Dialer // how to reach a peer (dial.go)
	Clock       clock.Clock
	Logger      *log.Logger
}

// Region is this node's view of the other regions.
type Region struct {
	opt      Options
	policies *policy.Store
	tab      *policy.PeerTable
	peers    []*peer
	byName   map[string]int
	start    int64
	sweepAt  atomic.Int64
	ignored  atomic.Int64 // slots pushed for keys of no global policy
	bytesOut atomic.Int64
}

// peer is one peer region's state: what this region heard from it and the
// link this region sends on.
type peer struct {
	Peer
	idx int

	lastHeard atomic.Int64 // clock instant of the latest batch received
	lag       atomic.Int64 // interval + one-way delay of that batch, ns
	maxLag    atomic.Int64 // the largest lag in the current period
	prevMax   atomic.Int64 // ... and in the previous one
	lagPeriod atomic.Int64 // the current period's number
	batchesIn atomic.Int64
	slotsIn   atomic.Int64

	mu      sync.Mutex
	pending []policy.Update
	since   int64 // the tick the oldest pending slot was collected at
	full    bool  // send the full state next: the link is new or lost batches
	wake    chan struct{}

	batchesOut atomic.Int64
	slotsOut   atomic.Int64
	linkUp     atomic.Bool
	linkErr    atomic.Pointer[string]
}

// maxPending bounds the slots queued for one peer; past it the queue is
// dropped and the peer gets the full state once it is reachable.
const maxPending = 1 << 20

// New returns the region of opt, serving the global policies of store.
func New(opt Options, store *policy.Store) *Region {
	if opt.Logger == nil {
		opt.Logger = log.Default()
	}
	r := &Region{opt: opt, policies: store, tab: policy.NewPeerTable(len(opt.Peers), opt.OnPartition), byName: map[string]int{}, start: opt.Clock.Now()}
	for i, p := range opt.Peers {
		pr := &peer{Peer: p, idx: i, full: true, wake: make(chan struct{}, 1)}
		pr.lastHeard.Store(r.start)
		r.peers = append(r.peers, pr)
		r.byName[p.Name] = i
	}
	return r
}

// Name is this region's name.
func (r *Region) Name() string { return r.opt.Name }

// Regions implements policy.Peers.
func (r *Region) Regions() int { return len(r.peers) + 1 }

// Table implements policy.Peers: the peers' counts the admission reads,
// and the own slots it records for the next batch.
func (r *Region) Table() *policy.PeerTable { return r.tab }

// Lags implements policy.Peers.
func (r *Region) Lags() []policy.PeerLag {
	out := make([]policy.PeerLag, len(r.peers))
	for i, p := range r.peers {
		out[i] = policy.PeerLag{Name: p.Name, Lag: time.Duration(p.lag.Load()),
			MaxLag: time.Duration(max(p.maxLag.Load(), p.prevMax.Load(), p.lag.Load())), Partitioned: r.tab.Partitioned(i)}
	}
	return out
}

// lagPeriod is how long a maximum lag is remembered: it is the largest of
// the current and the previous period's.
const lagPeriod = 10 * time.Second

// ErrUnknownRegion is a push from a region that is not a configured peer.
var ErrUnknownRegion = errors.New("unknown region")

// Push applies a batch peer from collected at sentAt (its clock): args are
// key id value triples. It returns how many slots changed anything. A
// slot for a key of no global policy is skipped (the policy may not be
// defined here yet); a malformed triple fails the rest of the batch.
func (r *Region) Push(e *engine.Engine, from []byte, sentAt int64, args [][]byte) (int, error) {
	i, ok := r.byName[string(from)]
	if !ok {
		return 0, fmt.Errorf("%w '%s' (not a region-peer of region '%s')", ErrUnknownRegion, clip(from), r.opt.Name)
	}
	if len(args)%3 != 0 {
		return 0, errors.New("wrong number of arguments: key id value triples")
	}
	p := r.peers[i]
	now := r.opt.Clock.Now()
	p.heardNow(now, sentAt, r.interval(), r.tab, r.opt.Logger)
	changed := 0
	for j := 0; j < len(args); j += 3 {
		id, ok1 := redisarg.ParseInt(args[j+1])
		v, ok2 := redisarg.ParseInt(args[j+2])
		if !ok1 || !ok2 || v < 0 {
			return changed, errors.New("slot id and value must be integers, the value at least 0")
		}
		key := args[j]
		name, ok := policy.PolicyOf(key)
		if !ok {
			r.ignored.Add(1)
			continue
		}
		global, bucket := r.policies.IsBucket(name)
		if !global {
			r.ignored.Add(1)
			continue
		}
		d := r.tab.Merge(i, key, policy.Slot{ID: id, Value: v}, now)
		if d == 0 {
			continue
		}
		changed++
		if bucket {
			if err := r.policies.Absorb(e, key, now, d); err != nil {
				return changed, err
			}
		}
	}
	p.batchesIn.Add(1)
	p.slotsIn.Add(int64(len(args) / 3))
	return changed, nil
}

// heardNow records a batch sent at sentAt, received at now.
func (p *peer) heardNow(now, sentAt int64, interval time.Duration, tab *policy.PeerTable, logger *log.Logger) {
	p.lastHeard.Store(now)
	lag := max(now-sentAt, 0) + int64(interval)
	p.lag.Store(lag)
	if period := now / int64(lagPeriod); period != p.lagPeriod.Load() {
		p.prevMax.Store(p.maxLag.Load())
		p.maxLag.Store(0)
		p.lagPeriod.Store(period)
	}
	for {
		m := p.maxLag.Load()
		if lag <= m || p.maxLag.CompareAndSwap(m, lag) {
			break
		}
	}
	if tab.SetPartitioned(p.idx, false, now) {
		logger.Printf("region: peer %s heard again: its counts count again", p.Name)
	}
}

func (r *Region) interval() time.Duration {
	if d := r.opt.Interval(); d > 0 {
		return d
	}
	return 50 * time.Millisecond
}

func (r *Region) timeout() time.Duration {
	if d := r.opt.Timeout(); d > 0 {
		return d
	}
	return 2 * time.Second
}

// Run sends batches to every peer each interval until done closes.
func (r *Region) Run(done <-chan struct{}) {
	var wg sync.WaitGroup
	for _, p := range r.peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.link(p, done)
		}()
	}
	var batch []policy.Update
	for sweep := 0; ; sweep++ {
		select {
		case <-done:
			wg.Wait()
			return
		case <-r.opt.Clock.After(r.interval()):
		}
		batch = r.tab.TakeDirty(batch[:0])
		now := r.opt.Clock.Now()
		for _, p := range r.peers {
			p.queue(batch, now)
			r.checkPartition(p, now)
		}
		// Records untouched for a long time are over in every region.
		r.tab.Sweep(sweep, now-int64(r.retain()))
	}
}

// retain is how long a record is kept after its last change: long enough
// for the longest policy's window (twice, for the sliding window's previous
// one) or bucket, and for a partition to heal.
func (r *Region) retain() time.Duration {
	longest := time.Duration(0)
	for _, in := range r.policies.List() {
		if in.Global {
			longest = max(longest, in.Period*time.Duration(max(in.EffectiveBurst()/in.Limit, 1)))
		}
	}
	return 2*longest + r.timeout()
}

// checkPartition marks p partitioned once it has been silent for longer
// than region-peer-timeout.
func (r *Region) checkPartition(p *peer, now int64) {
	silent := time.Duration(now - p.lastHeard.Load())
	if silent > r.timeout() && r.tab.SetPartitioned(p.idx, true, now) {
		r.opt.Logger.Printf("region: peer %s silent for %v (region-peer-timeout %v): partitioned, counted as on-partition %s says",
			p.Name, silent.Round(time.Millisecond), r.timeout(), r.opt.OnPartition())
	}
}

// queue adds a batch collected at now for p and wakes its link.
func (p *peer) queue(batch []policy.Update, now int64) {
	p.mu.Lock()
	if p.since == 0 {
		p.since = now
	}
	if !p.full {
		if len(p.pending)+len(batch) > maxPending {
			p.pending, p.full = nil, true
		} else {
			p.pending = append(p.pending, batch...)
		}
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take returns what p should be sent next, and the tick its oldest slot
// was collected at: the batch's age starts there.
func (p *peer) take(r *Region, buf []policy.Update) (out []policy.Update, since int64) {
	p.mu.Lock()
	full := p.full
	p.full = false
	since = p.since
	p.since = 0
	if since == 0 || full {
		since = r.opt.Clock.Now()
	}
	if full {
		p.pending = p.pending[:0]
	} else {
		buf, p.pending = append(buf[:0], p.pending...), p.pending[:0]
	}
	p.mu.Unlock()
	if full {
		return r.tab.All(buf[:0]), since
	}
	return buf, since
}

// resend makes p's next batch the full state (a batch was lost).
func (p *peer) resend() {
	p.mu.Lock()
	p.full = true
	p.pending = p.pending[:0]
	p.mu.Unlock()
}

// link sends p its batches, reconnecting as needed. Pushes are pipelined:
// each is written as soon as its batch is collected, without waiting for
// the answers to the earlier ones (a reader takes them in order), so a
// slot reaches the peer one interval plus one one-way delay after it was
// written, whatever the round trip. Order is TCP's, and merging is
// idempotent anyway. A push unanswered for region-peer-timeout, an error
// answer or a broken connection closes the link; the next one sends the
// full state.
func (r *Region) link(p *peer, done <-chan struct{}) {
	var c *conn
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	var buf []policy.Update
	var wire []byte
	for {
		var failed <-chan error
		if c != nil {
			failed = c.failed
		}
		select {
		case <-done:
			return
		case err := <-failed:
			c.close()
			c = nil
			p.resend()
			p.fail(r, err)
			continue
		case <-p.wake:
		}
		if c == nil {
			var err error
			if c, err = r.dial(p); err != nil {
				p.fail(r, err)
				continue
			}
			p.resend() // a new link: the peer may have missed anything
			p.linkUp.Store(true)
		}
		var since int64
		buf, since = p.take(r, buf)
		wire = appendPush(wire[:0], r.opt.Name, since, buf)
		if err := c.send(wire, r.timeout(), done); err != nil {
			c.close()
			c = nil
			p.resend()
			p.fail(r, err)
			continue
		}
		r.bytesOut.Add(int64(len(wire)))
		p.batchesOut.Add(1)
		p.slotsOut.Add(int64(len(buf)))
	}
}

// fail records why p's link is down.
func (p *peer) fail(r *Region, err error) {
	msg := err.Error()
	if p.linkUp.Swap(false) {
		r.opt.Logger.Printf("region: link to peer %s (%s) down: %v", p.Name, p.Addr, err)
	}
	p.linkErr.Store(&msg)
}

// AppendInfo writes INFO's # Regions lines.
func (r *Region) AppendInfo(b *strings.Builder) {
	now := r.opt.Clock.Now()
	fmt.Fprintf(b, "region:%s\r\nregion_peers:%d\r\nregion_sync_interval_ms:%d\r\nregion_peer_timeout_ms:%d\r\non_partition:%s\r\nregion_keys:%d\r\nregion_bytes_sent:%d\r\nregion_slots_ignored:%d\r\n",
		r.opt.Name, len(r.peers), r.interval().Milliseconds(), r.timeout().Milliseconds(), r.opt.OnPartition(), r.tab.Size(), r.bytesOut.Load(), r.ignored.Load())
	partitioned := 0
	for _, p := range r.peers {
		if r.tab.Partitioned(p.idx) {
			partitioned++
		}
	}
	fmt.Fprintf(b, "region_partitioned_peers:%d\r\n", partitioned)
	lags := r.Lags()
	for i, p := range r.peers {
		state := "ok"
		if r.tab.Partitioned(p.idx) {
			state = "partitioned"
		}
		link := "up"
		if !p.linkUp.Load() {
			link = "down"
		}
		fmt.Fprintf(b, "peer_%s:addr=%s,state=%s,link=%s,lag_ms=%d,max_lag_ms=%d,last_heard_ms=%d,batches_in=%d,slots_in=%d,batches_out=%d,slots_out=%d\r\n",
			p.Name, p.Addr, state, link, lags[i].Lag.Milliseconds(), lags[i].MaxLag.Milliseconds(), time.Duration(now-p.lastHeard.Load()).Milliseconds(),
			p.batchesIn.Load(), p.slotsIn.Load(), p.batchesOut.Load(), p.slotsOut.Load())
	}
	for _, in := range r.policies.List() {
		if !in.Global {
			continue
		}
		fmt.Fprintf(b, "global_%s:algorithm=%s,limit=%d,period=%s,bound=%d", in.Name, in.Algorithm, in.Limit, in.PeriodString(), policy.Bound(in.Policy, lags))
		for _, l := range lags {
			fmt.Fprintf(b, ",bound_%s=%d", l.Name, policy.Bound(in.Policy, []policy.PeerLag{l}))
		}
		b.WriteString("\r\n")
	}
}

func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
