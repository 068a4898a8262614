package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/limitdb/limitdb/engine/calendar"
)

// AppendInfo writes one INFO line per policy in effect, ordered by name:
//
//	policy_api-per-user:algorithm=gcra,limit=100,period=1m,burst=20,shadow=0,source=file,admitted=5,denied=1,shadow_denied=0
//
// then scope=global,bound=N for a global policy and wait_replicas=N for
// one whose replies wait for replicas.
func (s *Store) AppendInfo(b *strings.Builder) {
	for _, in := range s.List() {
		shadow := 0
		if in.Shadow {
			shadow = 1
		}
		period := in.PeriodString()
		if in.Calendar.Unit != 0 {
			period += ",timezone=" + in.Calendar.Zone()
		}
		fmt.Fprintf(b, "policy_%s:algorithm=%s,limit=%d,period=%s,burst=%d,shadow=%d,source=%s,admitted=%d,denied=%d,shadow_denied=%d",
			in.Name, in.Algorithm, in.Limit, period, in.EffectiveBurst(), shadow, in.Source,
			in.Admitted, in.Denied, in.ShadowDenied)
		if in.Global {
			fmt.Fprintf(b, ",scope=global,bound=%d", Bound(in.Policy, s.Lags()))
		}
		if in.WaitReplicas > 0 {
			fmt.Fprintf(b, ",wait_replicas=%d", in.WaitReplicas)
		}
		b.WriteString("\r\n")
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

	Global bool `json:"global,omitempty"` // scope: global

	WaitReplicas int `json:"wait_replicas,omitempty"`

	Calendar string `json:"calendar,omitempty"` // a calendar period's unit
	Timezone string `json:"timezone,omitempty"`
	Holidays string `json:"holidays,omitempty"`
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
		sp := savedPolicy{Name: p.Name, Algorithm: string(p.Algorithm), Limit: p.Limit, PeriodNs: int64(p.Period), Burst: p.Burst, Shadow: p.Shadow, Global: p.Global}
		sp.WaitReplicas = p.WaitReplicas
		if p.Calendar.Unit != 0 {
			sp.Calendar, sp.Timezone, sp.Holidays = p.Calendar.Unit.String(), p.Calendar.Timezone, p.Calendar.Holidays
		}
		out.Policies = append(out.Policies, sp)
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
		ps[i] = Policy{Name: sp.Name, Algorithm: Algorithm(sp.Algorithm), Limit: sp.Limit, Period: time.Duration(sp.PeriodNs), Burst: sp.Burst, Shadow: sp.Shadow, Global: sp.Global}
		ps[i].WaitReplicas = sp.WaitReplicas
		if sp.Calendar != "" {
			u, ok := calendar.ParseUnit(sp.Calendar)
			if !ok {
				return fmt.Errorf("policy: snapshot section: policy %q: unknown calendar period %q", sp.Name, sp.Calendar)
			}
			ps[i].Calendar = CalendarPeriod{Unit: u, Timezone: sp.Timezone, Holidays: sp.Holidays}
		}
	}
	if err := s.ReplaceRuntime(ps); err != nil {
		return fmt.Errorf("policy: snapshot section: %w", err)
	}
	return nil
}
