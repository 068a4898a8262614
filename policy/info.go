package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/limitdb/limitdb/engine/limit"
)

// AppendInfo writes one INFO line per policy in effect, ordered by name:
//
//	policy_api-per-user:algorithm=gcra,limit=100,period=1m,burst=20,shadow=0,source=file,admitted=5,denied=1,shadow_denied=0
func (s *Store) AppendInfo(b *strings.Builder) {
	for _, in := range s.List() {
		shadow := 0
		if in.Shadow {
			shadow = 1
		}
		fmt.Fprintf(b, "policy_%s:algorithm=%s,limit=%d,period=%s,burst=%d,shadow=%d,source=%s,admitted=%d,denied=%d,shadow_denied=%d\r\n",
			in.Name, in.Algorithm, in.Limit, limit.FormatDuration(in.Period), in.EffectiveBurst(), shadow, in.Source,
			in.Admitted, in.Denied, in.ShadowDenied)
	}
}

// savedPolicy is a runtime policy as a snapshot keeps it.
type savedPolicy struct {
	Name      string `json:"name"`
	Algorithm string `json:"algorithm"`
	Limit     int64  `json:"limit"`
	PeriodNs  int64  `json:"period_ns"`
	Burst     int64  `json:"burst,omitempty"`
	Shadow    bool   `json:"shadow,omitempty"`
}

// savedRuntime is the snapshot section's contents: a version and the list.
type savedRuntime struct {
	Version  int           `json:"version"`
	Policies []savedPolicy `json:"policies"`
}

// MarshalRuntime encodes the runtime policies for a snapshot section
// (JSON: {"version":1,"policies":[{"name":...,"period_ns":...}]}).
func (s *Store) MarshalRuntime() ([]byte, error) {
	out := savedRuntime{Version: 1, Policies: []savedPolicy{}}
	for _, p := range s.Runtime() {
		out.Policies = append(out.Policies, savedPolicy{p.Name, string(p.Algorithm), p.Limit, int64(p.Period), p.Burst, p.Shadow})
	}
	return json.Marshal(out)
}

// UnmarshalRuntime replaces the runtime policies with a snapshot section's;
// on any error (unknown version, invalid policy) nothing changes.
func (s *Store) UnmarshalRuntime(b []byte) error {
	var in savedRuntime
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("policy: snapshot section: %w", err)
	}
	if in.Version != 1 {
		return fmt.Errorf("policy: snapshot section version %d not supported", in.Version)
	}
	ps := make([]Policy, len(in.Policies))
	for i, sp := range in.Policies {
		ps[i] = Policy{Name: sp.Name, Algorithm: Algorithm(sp.Algorithm), Limit: sp.Limit, Period: time.Duration(sp.PeriodNs), Burst: sp.Burst, Shadow: sp.Shadow}
	}
	if err := s.ReplaceRuntime(ps); err != nil {
		return fmt.Errorf("policy: snapshot section: %w", err)
	}
	return nil
}
