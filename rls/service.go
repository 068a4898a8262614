package rls

import (
	"context"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/limitdb/limitdb/engine"
)

// Service answers envoy.service.ratelimit.v3.RateLimitService from eng's
// keyspace with the rules it holds, reading the time from eng's clock.
type Service struct {
	rlspb.UnimplementedRateLimitServiceServer
	eng   *engine.Engine
	rules atomic.Pointer[Config]
	watch watchState // the rules directory (watch.go)
	// headers adds RateLimit-* response_headers_to_add (SetResponseHeaders).
	headers atomic.Bool
	// counters are the per-rule statistics (stats.go).
	counters counters
	// allOrNothing: requests are charged in AllOrNothing mode
	// (SetAllOrNothing).
	allOrNothing atomic.Bool
	// stopWhenOver: requests are charged in StopWhenOverLimit mode
	// (SetStopIncrementWhenOverLimit).
	stopWhenOver atomic.Bool
	// shadow: every answer's overall code is OK (SetShadowMode).
	shadow atomic.Bool
	// quota: every rule is in quota mode (SetQuotaMode).
	quota atomic.Bool
	// nearRatio holds the float32 bits of the near-limit share
	// (SetNearLimitRatio).
	nearRatio atomic.Uint32
	// headerNames are the RateLimit-* headers' names (SetHeaderNames).
	headerNames atomic.Pointer[[3]string]
	// readOnly, when set, tells whether the keyspace refuses writes (a
	// read-only replica): requests that would charge are then refused.
	readOnly func() bool
	// charger charges the counters (SetCharger); EngineCharger by default.
	charger Charger
	// scratch holds *decision: memory the requests reuse.
	scratch sync.Pool
}

// SetCharger makes c charge the service's counters, in place of the
// engine directly. A node hands its command layer's, so that every charge
// passes the gates a RESP command passes and, in a cluster, is charged on
// the primary that owns its key. Call it before serving.
func (s *Service) SetCharger(c Charger) { s.charger = c }

// ErrReadOnly refuses a request that would charge on a read-only replica:
// gRPC's UNAVAILABLE, with Redis's refusal of a write as its message. An
// Envoy filter with failure_mode_deny false lets the request through.
var ErrReadOnly = status.Error(codes.Unavailable, "READONLY You can't write against a read only replica.")

// SetReadOnly makes the service ask readOnly before each request; while
// it answers true, a request with any descriptor of hits above 0 is
// refused with ErrReadOnly, and checks (every hits_addend 0) are answered
// from the counters as they stand. Call it before serving.
func (s *Service) SetReadOnly(readOnly func() bool) { s.readOnly = readOnly }

// SetStopIncrementWhenOverLimit turns on (or off) envoyproxy/ratelimit's
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: when a descriptor of a request
// would go over, the others are not charged (StopWhenOverLimit).
// SetAllOrNothing takes precedence when both are on.
func (s *Service) SetStopIncrementWhenOverLimit(on bool) { s.stopWhenOver.Store(on) }

// SetShadowMode turns on (or off) envoyproxy/ratelimit's global
// SHADOW_MODE: every answer's overall code is OK, while the descriptors'
// codes, the counters, the headers and the per-rule statistics stay what
// they would have been.
func (s *Service) SetShadowMode(on bool) { s.shadow.Store(on) }

// SetQuotaMode turns on (or off) envoyproxy/ratelimit's global
// QUOTA_MODE: every rule answers as a quota_mode rule does
// (RateLimit.QuotaMode).
func (s *Service) SetQuotaMode(on bool) { s.quota.Store(on) }

// SetNearLimitRatio sets the share of a limit past which hits count as
// near it in the statistics (NEAR_LIMIT_RATIO; NearLimitRatio by default).
func (s *Service) SetNearLimitRatio(r float32) { s.nearRatio.Store(math.Float32bits(r)) }

// Default names of the RateLimit-* headers, envoyproxy/ratelimit's
// LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER and LIMIT_RESET_HEADER.
const (
	HeaderLimit     = "RateLimit-Limit"
	HeaderRemaining = "RateLimit-Remaining"
	HeaderReset     = "RateLimit-Reset"
)

// SetHeaderNames names the headers SetResponseHeaders adds: the limit,
// the remaining count and the seconds to the reset ("" keeps the default).
func (s *Service) SetHeaderNames(limit, remaining, reset string) {
	names := [3]string{HeaderLimit, HeaderRemaining, HeaderReset}
	for i, n := range []string{limit, remaining, reset} {
		if n != "" {
			names[i] = n
		}
	}
	s.headerNames.Store(&names)
}

// SetAllOrNothing chooses how a request of several descriptors is charged:
// on, only when every descriptor is admitted (AllOrNothing); off, each on
// its own (PerDescriptor, envoyproxy/ratelimit's way, the default).
func (s *Service) SetAllOrNothing(on bool) { s.allOrNothing.Store(on) }

// SetResponseHeaders turns on (or off) the RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset headers in every answer, as
// envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED does.
func (s *Service) SetResponseHeaders(on bool) { s.headers.Store(on) }

// New returns a service of eng with rules (nil: none, every answer OK).
func New(eng *engine.Engine, rules *Config) *Service {
	s := &Service{eng: eng, charger: EngineCharger{eng}}
	s.scratch.New = func() any { return new(decision) }
	s.SetRules(rules)
	s.SetNearLimitRatio(NearLimitRatio)
	s.SetHeaderNames("", "", "")
	s.SetMaxConfigBytes(DefaultMaxConfigBytes)
	return s
}

// SetRules replaces the rules; requests in flight finish with the old ones.
func (s *Service) SetRules(c *Config) {
	if c == nil {
		c = &Config{domains: map[string]*node{}}
	}
	s.rules.Store(c)
}

// Rules is the rules in use.
func (s *Service) Rules() *Config { return s.rules.Load() }

// ShouldRateLimit implements RateLimitServiceServer. A domain or a
// descriptor without a rule is OK, as Envoy expects.
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlspb.RateLimitRequest) (*rlspb.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		// envoyproxy/ratelimit's answer to a request without a domain.
		return nil, status.Error(codes.Unknown, "rate limit domain must not be empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, status.Error(codes.Unknown, "rate limit descriptor list must not be empty")
	}
	return s.Decide(req, s.eng.Now())
}

// Decide answers req at now (Unix ns), for a caller that names no ACL
// user (Envoy's gRPC and HTTP requests).
func (s *Service) Decide(req *rlspb.RateLimitRequest, now int64) (*rlspb.RateLimitResponse, error) {
	return s.DecideFor("", req, now)
}

// DecideFor answers req at now (Unix ns) for the ACL user user ("": none
// known). A charge the store refuses or cannot make is an error: gRPC's
// UNAVAILABLE with Redis's READONLY message on a read-only replica
// (ErrReadOnly), otherwise gRPC's UNKNOWN with the store's message, the
// code envoyproxy/ratelimit's answer to a Redis error carries. Envoy then
// denies the request with failure_mode_deny true and lets it through
// with false.
//
// The three steps are three functions so that the charge, which runs the
// whole command path below it, starts from a small frame: gRPC runs each
// request on a new goroutine, and a path deeper than its first stack
// copies the stack on every request (bench/rls.sh).
func (s *Service) DecideFor(user string, req *rlspb.RateLimitRequest, now int64) (*rlspb.RateLimitResponse, error) {
	d := s.scratch.Get().(*decision)
	defer s.reuse(d)
	if err := s.prepare(d, req, now); err != nil {
		return nil, err
	}
	if len(d.plan.charges) > 0 {
		d.req.User = user
		if err := s.charger.Charge(&d.req, d.got); err != nil {
			return nil, chargeError(err)
		}
		Merge(d.plan.out, d.got, d.hits, d.plan.idx)
	}
	return s.respond(req.Domain, d.plan.out), nil
}

// prepare matches req's descriptors against the rules and plans their
// charges into d: d.plan.out holds the statuses known without a charge,
// d.req the charges to make (all but its user).
func (s *Service) prepare(d *decision, req *rlspb.RateLimitRequest, now int64) error {
	rules := s.rules.Load()
	d.hits = slices.Grow(d.hits[:0], len(req.Descriptors))
	replaced := false
	for _, desc := range req.Descriptors {
		var h Hit
		h, d.entries = resolve(rules, req, desc, d.entries)
		d.hits = append(d.hits, h)
		replaced = replaced || (h.Limit != nil && len(h.Limit.Replaces) > 0)
	}
	hits := d.hits
	if replaced {
		dropReplaced(hits)
	}
	if s.readOnly != nil && charges(hits) && s.readOnly() {
		return ErrReadOnly
	}
	mode := PerDescriptor
	switch {
	case s.allOrNothing.Load():
		mode = AllOrNothing
	case s.stopWhenOver.Load():
		mode = StopWhenOverLimit
	}
	d.plan.make(req.Domain, hits, now)
	if charges := d.plan.charges; len(charges) > 0 {
		d.req = ChargeRequest{Charges: charges, Mode: mode,
			NearRatio: math.Float32frombits(s.nearRatio.Load()), Now: now}
		d.got = append(d.got[:0], make([]Status, len(charges))...)
	}
	return nil
}

// respond builds the response to a request of domain from its statuses.
func (s *Service) respond(domain string, sts []Status) *rlspb.RateLimitResponse {
	resp := &rlspb.RateLimitResponse{OverallCode: rlspb.RateLimitResponse_OK,
		Statuses: make([]*rlspb.RateLimitResponse_DescriptorStatus, len(sts))}
	// The headers are chosen from the statuses as they were before quota
	// mode took their duration_until_reset away.
	headers := s.headers.Load()
	var headed []*rlspb.RateLimitResponse_DescriptorStatus
	if headers {
		headed = make([]*rlspb.RateLimitResponse_DescriptorStatus, len(sts))
	}
	quotaAll := s.quota.Load()
	for i := range sts {
		st := &sts[i]
		s.counters.add(domain, *st)
		ds := descriptorStatus(*st)
		resp.Statuses[i] = ds
		if headers {
			headed[i] = ds
		}
		if st.Limit == nil || !st.Limited() {
			continue
		}
		if !quotaAll && !st.Limit.QuotaMode {
			resp.OverallCode = rlspb.RateLimitResponse_OVER_LIMIT
			continue
		}
		resp.Statuses[i] = &rlspb.RateLimitResponse_DescriptorStatus{Code: rlspb.RateLimitResponse_OK,
			CurrentLimit: ds.CurrentLimit, LimitRemaining: ds.LimitRemaining}
		if headers {
			ds.Code = rlspb.RateLimitResponse_OK
		}
	}
	if headers {
		resp.ResponseHeadersToAdd = limitHeaders(headed, s.headerNames.Load())
	}
	if s.shadow.Load() {
		// envoyproxy/ratelimit's SHADOW_MODE: what would have happened is
		// in the statuses and the headers; the request goes through.
		resp.OverallCode = rlspb.RateLimitResponse_OK
	}
	return resp
}

// chargeError is the service's answer to a Charger's error.
func chargeError(err error) error {
	if strings.HasPrefix(err.Error(), "READONLY ") {
		return ErrReadOnly
	}
	return status.Error(codes.Unknown, err.Error())
}

// charges reports whether any descriptor adds hits (even one without a
// rule: a request is refused or served whole, whatever its rules).
func charges(hits []Hit) bool {
	for _, h := range hits {
		if h.Hits > 0 {
			return true
		}
	}
	return false
}

// limitHeaders are the RateLimit-* headers of the most restrictive
// descriptor, chosen as envoyproxy/ratelimit chooses it: the last one that
// is OVER_LIMIT, else the first with the fewest remaining among those with
// a current_limit. None when no descriptor has a limit. RateLimit-Reset is
// the seconds to the end of that descriptor's window. names are the
// headers' names: limit, remaining, reset.
func limitHeaders(sts []*rlspb.RateLimitResponse_DescriptorStatus, names *[3]string) []*corev3.HeaderValue {
	var pick *rlspb.RateLimitResponse_DescriptorStatus
	least := uint32(math.MaxUint32)
	for _, st := range sts {
		if st.CurrentLimit != nil && st.LimitRemaining < least {
			pick, least = st, st.LimitRemaining
		}
		if st.Code == rlspb.RateLimitResponse_OVER_LIMIT {
			pick, least = st, 0
		}
	}
	if pick == nil {
		return nil
	}
	return []*corev3.HeaderValue{
		{Key: names[0], Value: strconv.FormatUint(uint64(pick.CurrentLimit.RequestsPerUnit), 10)},
		{Key: names[1], Value: strconv.FormatUint(uint64(pick.LimitRemaining), 10)},
		{Key: names[2], Value: strconv.FormatInt(pick.DurationUntilReset.GetSeconds(), 10)},
	}
}

// resolve finds a descriptor's rule and hits. A per-descriptor limit
// override (from Envoy's route configuration) replaces the rules' limit,
// as in envoyproxy/ratelimit, but only in a domain that has rules. A
// per-descriptor hits_addend counts as given, 0 included (a check that
// charges nothing); otherwise the request's, where 0 means 1.
func resolve(rules *Config, req *rlspb.RateLimitRequest, d *rlcommon.RateLimitDescriptor, slab []Entry) (Hit, []Entry) {
	at := len(slab)
	for _, e := range d.GetEntries() {
		slab = append(slab, Entry{Key: e.GetKey(), Value: e.GetValue()})
	}
	entries := slab[at:len(slab):len(slab)]
	h := Hit{Entries: entries, Hits: uint64(max(1, req.GetHitsAddend()))}
	if a := d.GetHitsAddend(); a != nil {
		h.Hits = min(a.GetValue(), math.MaxUint32)
	}
	if _, known := rules.domains[req.GetDomain()]; known && d.GetLimit() != nil {
		// The override's enum (envoy.type.v3.RateLimitUnit) numbers its
		// units as the response's does.
		h.Limit = &RateLimit{RequestsPerUnit: d.GetLimit().GetRequestsPerUnit(),
			Unit: Unit(d.GetLimit().GetUnit()), FullKey: overrideKey(req.GetDomain(), entries)}
		return h, slab
	}
	m := rules.Match(req.GetDomain(), entries)
	h.Limit, h.Shared, h.StatsKey = m.Limit, m.Shared, m.StatsKey
	return h, slab
}

// decision is one request's working memory, which the service's
// requests take turns to reuse (Service.scratch).
type decision struct {
	hits    []Hit
	entries []Entry // the hits' entries, one after another
	plan    plan
	req     ChargeRequest
	got     []Status
}

// reuse gives d back for the next request, unless it grew too large to
// keep.
func (s *Service) reuse(d *decision) {
	if d.reset() {
		s.scratch.Put(d)
	}
}

// maxScratch bounds what a decision keeps for the next request: a rare
// request of many descriptors leaves its memory to the collector.
const maxScratch = 64

// reset forgets the request's rules and keys; false when d grew too
// large to keep.
func (d *decision) reset() bool {
	if cap(d.hits) > maxScratch || cap(d.entries) > 4*maxScratch || cap(d.plan.keys) > 256*maxScratch {
		return false
	}
	clear(d.hits[:cap(d.hits)])
	clear(d.entries[:cap(d.entries)])
	clear(d.plan.out[:cap(d.plan.out)])
	clear(d.plan.charges[:cap(d.plan.charges)])
	clear(d.got[:cap(d.got)])
	d.req = ChargeRequest{}
	return true
}

// dropReplaced leaves out of the decision every rule named in the replaces
// of a rule matched by the same request (an unlimited rule's replaces
// count too, and a replaced rule's own replaces still apply), as
// envoyproxy/ratelimit does: the descriptor is then OK with no limit and
// counts nowhere.
func dropReplaced(hits []Hit) {
	names := map[string]bool{}
	for _, h := range hits {
		if h.Limit != nil {
			for _, r := range h.Limit.Replaces {
				names[r] = true
			}
		}
	}
	for i, h := range hits {
		if h.Limit != nil && h.Limit.Name != "" && names[h.Limit.Name] {
			hits[i].Limit, hits[i].Shared, hits[i].StatsKey = nil, nil, ""
		}
	}
}

// overrideKey names an override's statistics as envoyproxy/ratelimit
// does: domain.key_value.key_value...
func overrideKey(domain string, entries []Entry) string {
	k := domain + "."
	for i, e := range entries {
		if i > 0 {
			k += "."
		}
		k += e.Key
		if e.Value != "" {
			k += "_" + e.Value
		}
	}
	return k
}

// descriptorStatus is a status on the wire: a rule's status carries its
// limit and the time to the window's end; an unlimited rule's carries
// neither, and math.MaxUint32 remaining.
func descriptorStatus(st Status) *rlspb.RateLimitResponse_DescriptorStatus {
	out := &rlspb.RateLimitResponse_DescriptorStatus{Code: rlspb.RateLimitResponse_OK, LimitRemaining: st.Remaining}
	if st.Limit == nil || st.Limit.Unlimited {
		return out
	}
	if st.Limited() {
		out.Code = rlspb.RateLimitResponse_OVER_LIMIT
	}
	out.CurrentLimit = &rlspb.RateLimitResponse_RateLimit{Name: st.Limit.Name,
		RequestsPerUnit: st.Limit.RequestsPerUnit, Unit: st.Limit.Unit}
	out.DurationUntilReset = &durationpb.Duration{Seconds: st.ResetAfter}
	return out
}

// Server is the gRPC server of a Service, with grpc.health.v1 health
// checking (SERVING for "" and the RLS service) and reflection.
type Server struct {
	grpc   *grpc.Server
	health *health.Server
}

// NewServer registers svc on a new gRPC server built with opts.
func NewServer(svc *Service, opts ...grpc.ServerOption) *Server {
	g := grpc.NewServer(opts...)
	rlspb.RegisterRateLimitServiceServer(g, svc)
	h := health.NewServer()
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus(rlspb.RateLimitService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, h)
	reflection.Register(g)
	return &Server{grpc: g, health: h}
}

// Serve serves ln until Stop.
func (s *Server) Serve(ln net.Listener) error { return s.grpc.Serve(ln) }

// Stop reports NOT_SERVING, then closes the listeners and every
// connection, failing the calls in flight.
func (s *Server) Stop() {
	s.health.Shutdown()
	s.grpc.Stop()
}
