package rls

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// maxJSONBody bounds a /json request's body: a rate limit request is a few
// descriptors, never megabytes.
const maxJSONBody = 1 << 20

// HTTPHandler serves envoyproxy/ratelimit's HTTP side of s:
//
//   - POST /json: a RateLimitRequest in protobuf's JSON mapping
//     ({"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}]}]}),
//     answered with the RateLimitResponse in the same mapping; 429 when
//     the overall code is OVER_LIMIT, 400 (with no body but the status
//     text) for a request that does not parse or that ShouldRateLimit
//     refuses, as envoyproxy/ratelimit answers, and 503 with the READONLY
//     message for a request that would charge on a read-only replica
//     (ErrReadOnly);
//   - GET /healthcheck: 200 "OK";
//   - GET /rlconfig: the rules in use, one line per rule (Dump).
func (s *Service) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/json", s.serveJSON)
	mux.HandleFunc("/healthcheck", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "OK")
	})
	mux.HandleFunc("/rlconfig", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, s.Rules().Dump())
	})
	return mux
}

func (s *Service) serveJSON(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpStatus(w, http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		httpStatus(w, http.StatusBadRequest)
		return
	}
	var req rlspb.RateLimitRequest
	if err := protojson.Unmarshal(body, &req); err != nil {
		httpStatus(w, http.StatusBadRequest)
		return
	}
	resp, err := s.ShouldRateLimit(r.Context(), &req)
	if err == ErrReadOnly {
		http.Error(w, status.Convert(err).Message(), http.StatusServiceUnavailable)
		return
	}
	if err != nil {
		httpStatus(w, http.StatusBadRequest)
		return
	}
	out, err := protojson.Marshal(resp)
	if err != nil {
		httpStatus(w, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if resp.OverallCode == rlspb.RateLimitResponse_OVER_LIMIT {
		w.WriteHeader(http.StatusTooManyRequests)
	}
	w.Write(out)
}

func httpStatus(w http.ResponseWriter, code int) {
	http.Error(w, http.StatusText(code), code)
}

// Dump lists the rules as envoyproxy/ratelimit's /rlconfig does, one line
// per rule with a limit:
//
//	messaging.message_type_marketing.to_number: unit=DAY requests_per_unit=5, shadow_mode: false, quota_mode: false
//
// (a rule of limitdb's algorithm extension adds ", algorithm: gcra" and,
// where the algorithm has one, ", burst: 20";
// an unlimited rule shows unit=UNKNOWN requests_per_unit=0). Domains come
// in name order and each level's rules in key order (envoyproxy/ratelimit's
// order is its maps').
func (c *Config) Dump() string {
	var b strings.Builder
	for _, d := range c.Domains() {
		c.domains[d].dump(&b)
	}
	return b.String()
}

func (n *node) dump(b *strings.Builder) {
	if l := n.limit; l != nil {
		fmt.Fprintf(b, "%s: unit=%s requests_per_unit=%d, shadow_mode: %t, quota_mode: %t", l.FullKey, l.Unit, l.RequestsPerUnit, l.ShadowMode, l.QuotaMode)
		if l.Algorithm != "" {
			fmt.Fprintf(b, ", algorithm: %s", l.Algorithm)
		}
		if l.Algorithm.HasBurst() {
			burst := l.Burst
			if burst == 0 {
				burst = int64(l.RequestsPerUnit)
			}
			fmt.Fprintf(b, ", burst: %d", burst)
		}
		b.WriteByte('\n')
	}
	keys := make([]string, 0, len(n.children))
	for k := range n.children {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n.children[k].dump(b)
	}
}
