package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/calendar"
)

func TestParseRulesCalendarPeriods(t *testing.T) {
	t.Parallel()
	src := `policies:
  - name: monthly
    algorithm: fixed_window
    limit: 10000
    period: month
    timezone: Europe/Paris
  - name: per-business-day
    algorithm: sliding_window
    limit: 500
    period: Business_Day
    timezone: America/New_York
    holidays: [2025-12-25, 2026-01-01]
  - name: daily-utc
    algorithm: fixed_window
    limit: 5
    period: day
`
	ps, err := ParseRules("limits.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Policy{
		{Name: "monthly", Algorithm: FixedWindow, Limit: 10000, Calendar: CalendarPeriod{Unit: calendar.Month, Timezone: "Europe/Paris"}},
		{Name: "per-business-day", Algorithm: SlidingWindow, Limit: 500, Calendar: CalendarPeriod{Unit: calendar.BusinessDay, Timezone: "America/New_York", Holidays: "2025-12-25,2026-01-01"}},
		{Name: "daily-utc", Algorithm: FixedWindow, Limit: 5, Calendar: CalendarPeriod{Unit: calendar.Day}},
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d policies, want %d", len(ps), len(want))
	}
	for i := range want {
		if ps[i] != want[i] {
			t.Errorf("policy %d = %+v, want %+v", i, ps[i], want[i])
		}
	}
}

func TestParseRulesCalendarErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, want string
	}{
		{"unknown zone", "algorithm: fixed_window\n    limit: 1\n    period: month\n    timezone: Europe/Pariss",
			`limits.yaml:6: policies[0] (p): field timezone: unknown time zone "Europe/Pariss"`},
		{"the server's zone", "algorithm: fixed_window\n    limit: 1\n    period: month\n    timezone: Local",
			`limits.yaml:6: policies[0] (p): field timezone: time zone "Local" is the server's own`},
		{"a rate on a calendar", "algorithm: gcra\n    limit: 1\n    period: month",
			"limits.yaml:5: policies[0] (p): field period: a calendar period (month) applies to fixed_window and sliding_window only, not gcra"},
		{"a log on a calendar", "algorithm: sliding_log\n    limit: 1\n    period: day",
			"field period: a calendar period (day) applies to fixed_window and sliding_window only, not sliding_log"},
		{"a zone on a duration", "algorithm: fixed_window\n    limit: 1\n    period: 1h\n    timezone: Europe/Paris",
			"limits.yaml:6: policies[0] (p): field timezone: applies only to a calendar period"},
		{"holidays on a month", "algorithm: fixed_window\n    limit: 1\n    period: month\n    holidays: [2025-12-25]",
			"field holidays: holidays apply only to business_day"},
		{"a bad holiday", "algorithm: fixed_window\n    limit: 1\n    period: business_day\n    holidays: [2025-13-01]",
			`limits.yaml:6: policies[0] (p): field holidays: holiday "2025-13-01" is not a date`},
		{"holidays not a list", "algorithm: fixed_window\n    limit: 1\n    period: business_day\n    holidays: 2025-12-25",
			"field holidays: must be a list of dates"},
		{"a limit beyond 32 bits", "algorithm: fixed_window\n    limit: 4294967296\n    period: year",
			"field limit: limit must be between 1 and 4294967295"},
		{"a misspelt unit", "algorithm: fixed_window\n    limit: 1\n    period: months",
			"field period: invalid duration \"months\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRules("limits.yaml", []byte("policies:\n  - name: p\n    "+tc.body+"\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestCalendarPolicySteps: a monthly quota in Paris at fixed instants,
// through the store and the keyspace; the policy kept in a snapshot
// section comes back the same and keeps counting.
func TestCalendarPolicySteps(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2024, 2, 29, 22, 0, 0, 0, time.UTC).UnixNano() // 23:00 in Paris
	e := engine.New(clock.NewFake(t0), 1)
	s := NewStore(nil)
	p := Policy{Name: "monthly", Algorithm: FixedWindow, Limit: 2, Calendar: CalendarPeriod{Unit: calendar.Month, Timezone: "Europe/Paris"}}
	if err := s.Set(p); err != nil {
		t.Fatal(err)
	}
	hour := time.Hour.Milliseconds()
	for i, st := range []struct {
		at                      int64
		cost                    int64
		limited                 bool
		remaining, retry, reset int64
		save                    bool
	}{
		{at: t0, cost: 2, remaining: 0, retry: -1, reset: hour},
		{at: t0, cost: 1, limited: true, remaining: 0, retry: hour, reset: hour, save: true},
		// t2: 1 March 00:00 Paris; March loses an hour on its last Sunday.
		{at: t0 + int64(time.Hour), cost: 1, remaining: 1, retry: -1, reset: 31*24*hour - hour},
	} {
		r, err := s.Hit(e, []byte("monthly"), []byte("u"), st.at, st.cost)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := r.Result; got.Limited != st.limited || got.Remaining != st.remaining || got.RetryAfter != st.retry || got.ResetAfter != st.reset {
			t.Errorf("step %d: %+v, want limited=%v remaining=%d retry=%d reset=%d", i, got, st.limited, st.remaining, st.retry, st.reset)
		}
		if st.save {
			data, err := s.MarshalRuntime()
			if err != nil {
				t.Fatal(err)
			}
			s = NewStore(nil)
			if err := s.UnmarshalRuntime(data); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Get("monthly"); got.Policy != p {
				t.Fatalf("after a snapshot: %+v, want %+v", got.Policy, p)
			}
		}
	}
	ent, _ := e.Get([]byte("rl:monthly:u"), t0+int64(time.Hour))
	if ent.Kind != engine.KindCalendarWindow || ent.Expire != time.Date(2024, 3, 31, 22, 0, 0, 0, time.UTC).UnixNano() {
		t.Errorf("entry %+v: want a calendar window expiring at 1 April 00:00 Paris", ent)
	}
	var b strings.Builder
	s.AppendInfo(&b)
	if !strings.Contains(b.String(), "policy_monthly:algorithm=fixed_window,limit=2,period=month,timezone=Europe/Paris,burst=2,") {
		t.Errorf("INFO line %q", b.String())
	}
	// The same name changed to an hourly window starts the key afresh.
	if err := s.Set(Policy{Name: "monthly", Algorithm: FixedWindow, Limit: 2, Period: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Hit(e, []byte("monthly"), []byte("u"), t0+int64(time.Hour), 0); r.Result.Remaining != 2 {
		t.Errorf("after the change to 1h: %+v", r.Result)
	}
}
