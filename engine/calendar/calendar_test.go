package calendar

import (
	"errors"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func mustCal(t *testing.T, u Unit, zone string, holidays ...string) Calendar {
	t.Helper()
	c, err := New(u, zone, holidays)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// at parses an RFC 3339 instant with its offset, as the step tables write
// them.
func at(t *testing.T, s string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixNano()
}

func TestDayNumberRoundTrips(t *testing.T) {
	for n := int64(minDay - 800); n < maxDay+800; n++ {
		y, m, d := civil(n)
		if got := DayNumber(y, m, d); got != n {
			t.Fatalf("DayNumber(civil(%d)) = %d", n, got)
		}
		want := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(n))
		if wy, wm, wd := want.Date(); wy != y || wm != m || wd != d {
			t.Fatalf("civil(%d) = %d-%d-%d, time says %v", n, y, m, d, want)
		}
	}
}

// TestStartIsTheFirstInstantOfTheDate: in zones that change their clocks
// at 02:00, at midnight (skipping or repeating it), by half an hour, and
// one that skipped a whole date, Start(n) is the first instant whose local
// date is n or later.
func TestStartIsTheFirstInstantOfTheDate(t *testing.T) {
	zones := []string{"UTC", "Europe/Paris", "America/New_York", "America/Santiago", "America/Havana",
		"Asia/Beirut", "Australia/Lord_Howe", "Pacific/Apia", "America/Sao_Paulo", "Asia/Tehran"}
	from, to := DayNumber(2008, 1, 1), DayNumber(2031, 1, 1)
	for _, z := range zones {
		c := mustCal(t, Day, z)
		for n := from; n < to; n++ {
			s := c.Start(n)
			if got := c.localDay(s); got < n {
				t.Fatalf("%s %s: Start = %v, local date %s", z, FormatDay(n), time.Unix(0, s).In(c.loc), FormatDay(got))
			}
			if got := c.localDay(s - 1); got >= n {
				t.Fatalf("%s %s: Start = %v, but 1ns before is already %s", z, FormatDay(n), time.Unix(0, s).In(c.loc), FormatDay(got))
			}
		}
	}
}

func TestWindowsOfEachUnit(t *testing.T) {
	paris := func(u Unit, h ...string) Calendar { return mustCal(t, u, "Europe/Paris", h...) }
	day := func(s string) int64 {
		d, _ := time.Parse(time.DateOnly, s)
		return DayNumber(d.Date())
	}
	cases := []struct {
		name        string
		cal         Calendar
		at          string
		first, next string // the window's first day and the next window's
		length      time.Duration
	}{
		{"day", paris(Day), "2024-06-12T12:00:00+02:00", "2024-06-12", "2024-06-13", 24 * time.Hour},
		{"spring-forward day, Paris", paris(Day), "2024-03-31T12:00:00+02:00", "2024-03-31", "2024-04-01", 23 * time.Hour},
		{"fall-back day, Paris", paris(Day), "2024-10-27T01:30:00+02:00", "2024-10-27", "2024-10-28", 25 * time.Hour},
		{"spring-forward day, New York", mustCal(t, Day, "America/New_York"), "2024-03-10T23:59:59-04:00", "2024-03-10", "2024-03-11", 23 * time.Hour},
		{"fall-back day, New York", mustCal(t, Day, "America/New_York"), "2024-11-03T00:00:00-04:00", "2024-11-03", "2024-11-04", 25 * time.Hour},
		{"week, Sunday night", paris(Week), "2024-06-16T23:59:59+02:00", "2024-06-10", "2024-06-17", 7 * 24 * time.Hour},
		{"week across the year end", paris(Week), "2025-01-01T09:00:00+01:00", "2024-12-30", "2025-01-06", 7 * 24 * time.Hour},
		{"week with a spring-forward Sunday", paris(Week), "2024-03-25T00:00:00+01:00", "2024-03-25", "2024-04-01", 7*24*time.Hour - time.Hour},
		{"month of 31 days", paris(Month), "2024-01-31T23:59:59+01:00", "2024-01-01", "2024-02-01", 31 * 24 * time.Hour},
		{"February of a leap year", paris(Month), "2024-02-29T12:00:00+01:00", "2024-02-01", "2024-03-01", 29 * 24 * time.Hour},
		{"February of a common year", paris(Month), "2023-02-01T00:00:00+01:00", "2023-02-01", "2023-03-01", 28 * 24 * time.Hour},
		{"month of 30 days", paris(Month), "2024-04-15T00:00:00+02:00", "2024-04-01", "2024-05-01", 30 * 24 * time.Hour},
		{"March, 31 days less the lost hour", paris(Month), "2024-03-31T22:00:00+02:00", "2024-03-01", "2024-04-01", 31*24*time.Hour - time.Hour},
		{"October, 31 days and the hour", paris(Month), "2024-10-31T23:00:00+01:00", "2024-10-01", "2024-11-01", 31*24*time.Hour + time.Hour},
		{"month in UTC is already March", mustCal(t, Month, "UTC"), "2024-02-29T23:30:00-01:00", "2024-03-01", "2024-04-01", 31 * 24 * time.Hour},
		{"leap year", mustCal(t, Year, "America/New_York"), "2024-12-31T23:59:59-05:00", "2024-01-01", "2025-01-01", 366 * 24 * time.Hour},
		{"common year", mustCal(t, Year, "America/New_York"), "2025-01-01T00:00:00-05:00", "2025-01-01", "2026-01-01", 365 * 24 * time.Hour},
		{"business day, Wednesday", paris(BusinessDay), "2024-03-06T10:00:00+01:00", "2024-03-06", "2024-03-07", 24 * time.Hour},
		{"business day, Friday runs to Monday", paris(BusinessDay), "2024-03-08T10:00:00+01:00", "2024-03-08", "2024-03-11", 72 * time.Hour},
		{"business day, Sunday counts in Friday", paris(BusinessDay), "2024-03-10T23:00:00+01:00", "2024-03-08", "2024-03-11", 72 * time.Hour},
		{"business day, a Monday holiday", paris(BusinessDay, "2024-04-01"), "2024-04-01T10:00:00+02:00", "2024-03-29", "2024-04-02", 4*24*time.Hour - time.Hour},
		{"business day, holidays and a weekend", paris(BusinessDay, "2024-12-25", "2024-12-26", "2024-12-24"), "2024-12-26T10:00:00+01:00", "2024-12-23", "2024-12-27", 4 * 24 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := at(t, tc.at)
			w := tc.cal.Window(now)
			if FormatDay(w) != tc.first {
				t.Fatalf("window starts %s, want %s", FormatDay(w), tc.first)
			}
			if got := FormatDay(tc.cal.Next(w)); got != tc.next {
				t.Fatalf("next window starts %s, want %s", got, tc.next)
			}
			start, end := tc.cal.Start(w), tc.cal.Start(tc.cal.Next(w))
			if got := time.Duration(end - start); got != tc.length {
				t.Fatalf("window lasts %v, want %v", got, tc.length)
			}
			if now < start || now >= end {
				t.Fatalf("%s is outside its window [%v, %v)", tc.at, time.Unix(0, start), time.Unix(0, end))
			}
			if w != day(tc.first) {
				t.Fatal("day numbers disagree with time.Parse")
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	cases := []struct {
		name     string
		unit     Unit
		zone     string
		holidays []string
		want     string
	}{
		{"unknown zone", Month, "Mars/Olympus_Mons", nil, `unknown time zone "Mars/Olympus_Mons"`},
		{"the server's zone", Month, "Local", nil, "the server's own"},
		{"no unit", 0, "UTC", nil, "unknown unit"},
		{"holidays on months", Month, "UTC", []string{"2024-12-25"}, "only to business_day"},
		{"a bad date", BusinessDay, "UTC", []string{"2024-02-30"}, `holiday "2024-02-30"`},
		{"a date out of range", BusinessDay, "UTC", []string{"2400-01-01"}, "outside the years"},
		{"too many holidays", BusinessDay, "UTC", make([]string, MaxHolidays+1), "at most 1000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.unit, tc.zone, tc.holidays)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
	if _, err := NewWindow(0, mustCal(t, Day, "UTC"), false); err == nil {
		t.Error("limit 0 accepted")
	}
	if _, err := NewWindow(math.MaxUint32+1, mustCal(t, Day, "UTC"), false); err == nil {
		t.Error("a limit beyond 32 bits accepted")
	}
	if _, err := NewWindow(1, Calendar{}, false); err == nil {
		t.Error("the zero Calendar accepted")
	}
	w, _ := NewWindow(1, mustCal(t, Year, "UTC"), false)
	for _, now := range []int64{math.MaxInt64, math.MinInt64, maxInstant} {
		if _, _, err := w.Apply(State{}, now, 1); !errors.Is(err, ErrOverflow) {
			t.Errorf("at %d: %v, want ErrOverflow", now, err)
		}
	}
}

func TestParseUnit(t *testing.T) {
	for _, s := range []string{"day", "WEEK", "Month", "year", "business_day"} {
		u, ok := ParseUnit(s)
		if !ok || !strings.EqualFold(u.String(), s) {
			t.Errorf("ParseUnit(%q) = %v, %v", s, u, ok)
		}
	}
	for _, s := range []string{"", "1d", "days", "30d", "businessday", "unknown"} {
		if _, ok := ParseUnit(s); ok {
			t.Errorf("ParseUnit(%q) accepted", s)
		}
	}
}

// TestZonesWithoutSystemZoneinfo: the zone database is compiled into the
// server, so zones resolve on a host with no /usr/share/zoneinfo. Go looks
// at $ZONEINFO, then the system's directories, then the embedded copy;
// time/tzdata in the server's imports is what puts the embedded copy there.
func TestZonesWithoutSystemZoneinfo(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the server's imports")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/limitdb/limitdb/cmd/limitdb").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains("\n"+string(out), "\ntime/tzdata\n") {
		t.Fatal("cmd/limitdb does not link time/tzdata: a host without zoneinfo would not know Europe/Paris")
	}
}

// TestMemoAgreesUnderConcurrency: copies of one Calendar share the memo of
// the last window asked for; goroutines asking about different windows at
// once always get the answer computed from the zone's rules.
func TestMemoAgreesUnderConcurrency(t *testing.T) {
	c := mustCal(t, Day, "Europe/Paris")
	bare := c
	bare.memo = nil // the same calendar without the memo
	base := at(t, "2024-10-26T00:00:00+02:00")
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			for i := int64(0); i < 2000; i++ {
				now := base + (i*7919+int64(g)*104729)*int64(time.Second)%(3*int64(day)) // 26 to 28 October, over the 25-hour day
				if got, want := c.Window(now), bare.Window(now); got != want {
					t.Errorf("Window(%v) = %s, want %s", time.Unix(0, now), FormatDay(got), FormatDay(want))
					return
				}
				w := c.Window(now)
				if got, want := c.Bounds(w), bare.Bounds(w); got != want {
					t.Errorf("Bounds(%s) = %+v, want %+v", FormatDay(w), got, want)
					return
				}
			}
		}(g)
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}
