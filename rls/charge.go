package rls

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/policy"
)

// A request is decided in three steps: the service resolves its
// descriptors to rules and counters' keys (Plan), a Charger charges the
// counters wherever they live (Apply, run by the store's own command,
// RLS.CHARGE, on the node that owns each key), and the service turns the
// statuses into Envoy's answer. The service never writes the keyspace
// itself: the command layer's gates (read-only replica, maxmemory, ACL,
// cluster slot ownership) and its statistics apply to every charge.

// Charge is one counter's share of a request: its key, the rule it counts
// for and the hits it adds. A fixed window charge (Limit.Limiter nil)
// counts in the window starting at Start (Unix seconds), the one its key
// names.
type Charge struct {
	Key   []byte
	Limit *RateLimit
	Hits  uint64
	Start int64
}

// ChargeRequest is what a Charger charges: a request's counters, in one
// mode, at the instant the service chose their windows.
type ChargeRequest struct {
	Charges   []Charge
	Mode      Mode
	NearRatio float32
	Now       int64 // Unix ns
	// User is the ACL user that asks (RL.SHOULD's connection's); "" for
	// Envoy's gRPC and HTTP requests, which name none.
	User string
}

// Charger charges a request's counters and puts one status per charge in
// out, in order (out has one per charge; Limit and StatsKey are left for
// the service to fill). An error is the store's refusal or failure (a
// gate's answer, an owner that cannot be reached): the service answers it
// as envoyproxy/ratelimit answers a Redis error. Neither req nor out is
// kept past the call: the service reuses their memory.
type Charger interface {
	Charge(req *ChargeRequest, out []Status) error
}

// EngineCharger charges in an engine directly, past every gate: for
// tests of the service's arithmetic and for embedding without a command
// layer. A node hands its service a Charger of its command layer.
type EngineCharger struct{ Eng *engine.Engine }

// Charge implements Charger.
func (e EngineCharger) Charge(req *ChargeRequest, out []Status) error {
	sts, err := Apply(e.Eng, req.Charges, req.Now, req.Mode, req.NearRatio)
	copy(out, sts)
	return err
}

// ---- RLS.CHARGE's arguments and reply -------------------------------------

// ChargeCommand is the name of the command a Charger runs (ChargeArgs).
const ChargeCommand = "RLS.CHARGE"

// StatusInts is how many integers RLS.CHARGE answers per charge.
const StatusInts = 8

var modeNames = [...]string{PerDescriptor: "per_descriptor", AllOrNothing: "all_or_nothing", StopWhenOverLimit: "stop_when_over_limit"}

// String is the mode's name in RLS.CHARGE.
func (m Mode) String() string { return modeNames[m] }

// ErrChargeSyntax is RLS.CHARGE arguments that do not parse.
var ErrChargeSyntax = errors.New("rls: bad charge")

// ChargeArgs appends to args the command that charges charges in mode on
// the node that runs it:
//
//	RLS.CHARGE mode near_ratio key hits rule [key hits rule ...]
//
// mode is per_descriptor, all_or_nothing or stop_when_over_limit; rule is
// UNIT:requests_per_unit:start for a fixed window (start the window's
// Unix second) or UNIT:requests_per_unit:algorithm:burst, either followed
// by :shadow for a rule in shadow mode.
func ChargeArgs(args [][]byte, mode Mode, nearRatio float32, charges []Charge) [][]byte {
	var b ChargeArgsBuilder
	return append(args, b.Build(mode, nearRatio, charges)...)
}

// ChargeArgsBuilder builds ChargeArgs's commands one after another in the
// same memory, so that a caller that charges over and over allocates
// nothing. Its zero value is ready to use.
type ChargeArgsBuilder struct {
	cmd       []byte // ChargeCommand
	args      [][]byte
	buf       []byte // the arguments' bytes, keys excepted, which are shared
	ratio     float32
	ratioText []byte // ratio formatted: a service's near ratio rarely changes
}

// Build returns ChargeArgs(nil, mode, nearRatio, charges), valid until
// the next Build.
func (b *ChargeArgsBuilder) Build(mode Mode, nearRatio float32, charges []Charge) [][]byte {
	if b.ratioText == nil || nearRatio != b.ratio {
		b.ratio, b.ratioText = nearRatio, strconv.AppendFloat(b.ratioText[:0], float64(nearRatio), 'g', -1, 32)
	}
	buf := append(b.buf[:0], mode.String()...)
	ends := [2]int{len(buf), 0}
	buf = append(buf, b.ratioText...)
	ends[1] = len(buf)
	for _, ch := range charges {
		buf = strconv.AppendUint(buf, ch.Hits, 10)
		buf = append(buf, ' ')
		buf = appendRule(buf, ch)
		buf = append(buf, ' ')
	}
	if b.cmd == nil {
		b.cmd = []byte(ChargeCommand)
	}
	args := append(b.args[:0], b.cmd, buf[:ends[0]:ends[0]], buf[ends[0]:ends[1]:ends[1]])
	rest := buf[ends[1]:]
	for _, ch := range charges {
		i := bytes.IndexByte(rest, ' ')
		hits := rest[:i:i]
		rest = rest[i+1:]
		i = bytes.IndexByte(rest, ' ')
		args = append(args, ch.Key, hits, rest[:i:i])
		rest = rest[i+1:]
	}
	b.args, b.buf = args, buf
	return args
}

func appendRule(b []byte, ch Charge) []byte {
	l := ch.Limit
	b = append(b, unitName(l.Unit)...)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(l.RequestsPerUnit), 10)
	b = append(b, ':')
	if l.Limiter == nil {
		b = strconv.AppendInt(b, ch.Start, 10)
	} else {
		b = append(b, l.Algorithm...)
		b = append(b, ':')
		b = strconv.AppendInt(b, l.Burst, 10)
	}
	if l.ShadowMode {
		b = append(b, ":shadow"...)
	}
	return b
}

// ParseChargeArgs reads RLS.CHARGE's arguments after its name, keeping
// the rules it parses in rc (nil: none kept).
func (rc *RuleCache) ParseChargeArgs(args [][]byte) (mode Mode, nearRatio float32, charges []Charge, err error) {
	if len(args) < 2 || (len(args)-2)%3 != 0 {
		return 0, 0, nil, fmt.Errorf("%w: want mode near_ratio and key hits rule triples", ErrChargeSyntax)
	}
	switch string(args[0]) {
	case "per_descriptor":
		mode = PerDescriptor
	case "all_or_nothing":
		mode = AllOrNothing
	case "stop_when_over_limit":
		mode = StopWhenOverLimit
	default:
		return 0, 0, nil, fmt.Errorf("%w: unknown mode '%s'", ErrChargeSyntax, args[0])
	}
	if nearRatio, err = rc.nearRatio(args[1]); err != nil {
		return 0, 0, nil, err
	}
	rest := args[2:]
	charges = make([]Charge, len(rest)/3)
	for i := range charges {
		ch := &charges[i]
		ch.Key = rest[3*i]
		if ch.Hits, err = strconv.ParseUint(string(rest[3*i+1]), 10, 32); err != nil {
			return 0, 0, nil, fmt.Errorf("%w: hits must be an integer from 0 to 4294967295", ErrChargeSyntax)
		}
		var ok bool
		if ch.Limit, ch.Start, ok = rc.cached(rest[3*i+2]); ok {
			continue
		}
		if ch.Limit, ch.Start, err = rc.parse(string(rest[3*i+2])); err != nil {
			return 0, 0, nil, err
		}
	}
	return mode, nearRatio, charges, nil
}

// AppendStatus appends the integers RLS.CHARGE answers for one charge:
// over (0 or 1), remaining, reset_after, then the statistics total_hits,
// over_limit, near_limit, within_limit and shadow_mode.
func AppendStatus(dst []int64, st Status) []int64 {
	over := int64(0)
	if st.Over {
		over = 1
	}
	s := st.Stats
	return append(dst, over, int64(st.Remaining), st.ResetAfter, int64(s.TotalHits), int64(s.OverLimit),
		int64(s.NearLimit), int64(s.WithinLimit), int64(s.ShadowMode))
}

// StatusOf reads one charge's AppendStatus integers back.
func StatusOf(v []int64) Status {
	return Status{Over: v[0] != 0, Remaining: uint32(v[1]), ResetAfter: v[2], Stats: Stats{TotalHits: uint64(v[3]),
		OverLimit: uint64(v[4]), NearLimit: uint64(v[5]), WithinLimit: uint64(v[6]), ShadowMode: uint64(v[7])}}
}

// RuleCache keeps the rules RLS.CHARGE has parsed, so that a charge of an
// algorithm's rule does not build its limiter on every request. It holds
// at most maxCachedRules; past that a rule is parsed on each use. It is
// read on every charge from every core and written once per rule, so its
// reads take no lock.
type RuleCache struct {
	m     atomic.Pointer[map[string]*RateLimit] // rule text (without a fixed window's start) -> limit; replaced whole on a write
	mu    sync.Mutex                            // orders the writes
	ratio atomic.Pointer[parsedRatio]           // the near ratio parsed last: a service sends the same one every time
}

type parsedRatio struct {
	text string
	r    float32
}

// nearRatio reads RLS.CHARGE's near_ratio, a number from 0 to 1.
func (rc *RuleCache) nearRatio(b []byte) (float32, error) {
	if rc != nil {
		if p := rc.ratio.Load(); p != nil && p.text == string(b) {
			return p.r, nil
		}
	}
	r, err := strconv.ParseFloat(string(b), 32)
	if err != nil || r < 0 || r > 1 {
		return 0, fmt.Errorf("%w: near_ratio must be a number from 0 to 1", ErrChargeSyntax)
	}
	if rc != nil {
		rc.ratio.Store(&parsedRatio{text: string(b), r: float32(r)})
	}
	return float32(r), nil
}

const maxCachedRules = 4096

// NewRuleCache returns an empty cache.
func NewRuleCache() *RuleCache { return &RuleCache{} }

// parse reads a rule of RLS.CHARGE: its limit, and the window's start of
// a fixed window. The start varies with every window, so the cache holds
// only the rest.
func (rc *RuleCache) parse(s string) (*RateLimit, int64, error) {
	f := strings.Split(s, ":")
	shadow := len(f) > 0 && f[len(f)-1] == "shadow"
	if shadow {
		f = f[:len(f)-1]
	}
	bad := func(why string) (*RateLimit, int64, error) {
		return nil, 0, fmt.Errorf("%w: rule '%s': %s", ErrChargeSyntax, s, why)
	}
	if len(f) != 3 && len(f) != 4 {
		return bad("want UNIT:requests_per_unit:start or UNIT:requests_per_unit:algorithm:burst")
	}
	var start int64
	name := s
	if len(f) == 3 {
		var err error
		if start, err = strconv.ParseInt(f[2], 10, 64); err != nil {
			return bad("start must be an integer")
		}
		name = f[0] + ":" + f[1]
		if shadow {
			name += ":shadow"
		}
	}
	if rc != nil {
		if m := rc.m.Load(); m != nil {
			if l, ok := (*m)[name]; ok {
				return l, start, nil
			}
		}
	}
	u, ok := rlspb.RateLimitResponse_RateLimit_Unit_value[f[0]]
	if !ok || UnitSeconds(Unit(u)) == 0 {
		return bad("unknown unit")
	}
	rpu, err := strconv.ParseUint(f[1], 10, 32)
	if err != nil {
		return bad("requests_per_unit must be an integer")
	}
	l := &RateLimit{Unit: Unit(u), RequestsPerUnit: uint32(rpu), ShadowMode: shadow}
	if len(f) == 4 {
		a, ok := policy.ParseAlgorithm(f[2])
		if !ok || a == policy.FixedWindow || a == policy.LeakyQueue || a == policy.Concurrency {
			return bad("unknown algorithm")
		}
		if l.Burst, err = strconv.ParseInt(f[3], 10, 64); err != nil {
			return bad("burst must be an integer")
		}
		l.Algorithm = a
		l.Limiter, err = policy.Limiter(policy.Policy{Algorithm: a, Limit: int64(rpu),
			Period: time.Duration(UnitSeconds(l.Unit)) * time.Second, Burst: l.Burst})
		if err != nil {
			return bad(err.Error())
		}
	}
	if rc != nil {
		rc.store(name, l)
	}
	return l, start, nil
}

// cached finds rule b in the cache without allocating: a rule cached
// whole, or a fixed window's "UNIT:requests_per_unit" with its start
// after the last colon. ok is false when the rule must be parsed.
func (rc *RuleCache) cached(b []byte) (l *RateLimit, start int64, ok bool) {
	if rc == nil {
		return nil, 0, false
	}
	m := rc.m.Load()
	if m == nil {
		return nil, 0, false
	}
	// An algorithm's rule, UNIT:requests_per_unit:algorithm:burst[:shadow],
	// is cached whole; a fixed window's without its start, under one or two
	// colons fewer, which no rule of three or more colons can be mistaken for.
	colons := bytes.Count(b, []byte{':'})
	if colons >= 3 {
		l, ok := (*m)[string(b)]
		return l, 0, ok
	}
	k := bytes.LastIndexByte(b, ':')
	if colons != 2 || k == len(b)-1 || len(b)-k-1 > 18 {
		return nil, 0, false
	}
	for _, c := range b[k+1:] {
		if c < '0' || c > '9' {
			return nil, 0, false
		}
		start = start*10 + int64(c-'0')
	}
	l, ok = (*m)[string(b[:k])]
	return l, start, ok
}

// store caches l under name, unless the cache is full.
func (rc *RuleCache) store(name string, l *RateLimit) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	old := rc.m.Load()
	if old != nil && (len(*old) >= maxCachedRules || (*old)[name] != nil) {
		return
	}
	next := make(map[string]*RateLimit, 1)
	if old != nil {
		next = make(map[string]*RateLimit, len(*old)+1)
		for k, v := range *old {
			next[k] = v
		}
	}
	next[name] = l
	rc.m.Store(&next)
}
