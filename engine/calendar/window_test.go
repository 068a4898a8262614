package calendar

import (
	"testing"
	"time"
)

// step is one request of a step table: at instant t (RFC 3339 with its
// offset), cost; then the decision wanted. Durations are exact
// nanoseconds; retry -1 means none.
type step struct {
	t                string
	cost             int64
	limited          bool
	remaining        int64
	retry, reset     time.Duration
	windowFirstDay   string // of the stored state after the step, "" = unchecked
	count, prevCount int64  // of the stored state, checked with windowFirstDay
}

const never = time.Duration(-1)

func runSteps(t *testing.T, w Window, steps []step) {
	t.Helper()
	var s State
	for i, st := range steps {
		now := at(t, st.t)
		d, next, err := w.Apply(s, now, st.cost)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, st.t, err)
		}
		if d.Limited != st.limited {
			t.Errorf("step %d (%s): limited = %v, want %v", i, st.t, d.Limited, st.limited)
		}
		if d.Remaining != st.remaining {
			t.Errorf("step %d (%s): remaining = %d, want %d", i, st.t, d.Remaining, st.remaining)
		}
		if time.Duration(d.RetryAfter) != st.retry {
			t.Errorf("step %d (%s): retry_after = %v, want %v", i, st.t, time.Duration(d.RetryAfter), st.retry)
		}
		if time.Duration(d.ResetAfter) != st.reset {
			t.Errorf("step %d (%s): reset_after = %v, want %v", i, st.t, time.Duration(d.ResetAfter), st.reset)
		}
		if st.windowFirstDay != "" {
			if got := FormatDay(next.Window); got != st.windowFirstDay || next.Count != st.count || next.Prev != st.prevCount {
				t.Errorf("step %d (%s): state = {%s %d %d}, want {%s %d %d}", i, st.t, got, next.Count, next.Prev, st.windowFirstDay, st.count, st.prevCount)
			}
		}
		if !d.Limited && st.cost > 0 {
			if exp := w.Expire(next); exp != now+d.ResetAfter {
				t.Errorf("step %d (%s): expires %v after, reset_after says %v", i, st.t, time.Duration(exp-now), time.Duration(d.ResetAfter))
			}
		}
		s = next
	}
}

func mustWindow(t *testing.T, limit int64, u Unit, zone string, sliding bool, holidays ...string) Window {
	t.Helper()
	w, err := NewWindow(limit, mustCal(t, u, zone, holidays...), sliding)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

const day = 24 * time.Hour

func TestFixedMonthAcrossMonthEnds(t *testing.T) {
	runSteps(t, mustWindow(t, 3, Month, "Europe/Paris", false), []step{
		// t0: the last hour of January, Paris time (22:00 UTC).
		{t: "2024-01-31T23:00:00+01:00", cost: 3, remaining: 0, retry: never, reset: time.Hour, windowFirstDay: "2024-01-01", count: 3},
		{t: "2024-01-31T23:30:00+01:00", cost: 1, limited: true, remaining: 0, retry: 30 * time.Minute, reset: 30 * time.Minute},
		// Already February in Paris, still January in UTC.
		{t: "2024-01-31T23:30:00Z", cost: 1, remaining: 2, retry: never, reset: 29*day - 30*time.Minute, windowFirstDay: "2024-02-01", count: 1, prevCount: 3},
		{t: "2024-02-29T23:59:59+01:00", cost: 2, remaining: 0, retry: never, reset: time.Second},
		{t: "2024-02-29T23:59:59+01:00", cost: 1, limited: true, remaining: 0, retry: time.Second, reset: time.Second},
		// March loses an hour on the 31st: it ends at 1 April 00:00 +02:00.
		{t: "2024-03-01T00:00:00+01:00", cost: 1, remaining: 2, retry: never, reset: 31*day - time.Hour, windowFirstDay: "2024-03-01", count: 1, prevCount: 3},
		{t: "2024-04-30T12:00:00+02:00", cost: 3, remaining: 0, retry: never, reset: 12 * time.Hour, windowFirstDay: "2024-04-01", count: 3, prevCount: 1},
		// October gains the hour back.
		{t: "2024-10-01T00:00:00+02:00", cost: 1, remaining: 2, retry: never, reset: 31*day + time.Hour},
		{t: "2024-11-30T23:59:59+01:00", cost: 0, remaining: 3, retry: never, reset: 0},
	})
	runSteps(t, mustWindow(t, 2, Month, "America/New_York", false), []step{
		{t: "2023-02-01T00:00:00-05:00", cost: 2, remaining: 0, retry: never, reset: 28 * day},
		{t: "2023-02-28T23:00:00-05:00", cost: 1, limited: true, remaining: 0, retry: time.Hour, reset: time.Hour},
		// 1 March 00:00 New York is 05:00 UTC: the UTC month changed five hours before.
		{t: "2023-03-01T04:59:59Z", cost: 1, limited: true, remaining: 0, retry: time.Second, reset: time.Second},
		{t: "2023-03-01T05:00:00Z", cost: 1, remaining: 1, retry: never, reset: 31*day - time.Hour},
	})
}

func TestFixedYearEnd(t *testing.T) {
	runSteps(t, mustWindow(t, 10, Year, "America/New_York", false), []step{
		{t: "2024-12-31T23:59:59-05:00", cost: 10, remaining: 0, retry: never, reset: time.Second, windowFirstDay: "2024-01-01", count: 10},
		{t: "2025-01-01T04:59:59Z", cost: 1, limited: true, remaining: 0, retry: time.Second, reset: time.Second},
		{t: "2025-01-01T00:00:00-05:00", cost: 4, remaining: 6, retry: never, reset: 365 * day, windowFirstDay: "2025-01-01", count: 4, prevCount: 10},
	})
}

func TestFixedDayAcrossDST(t *testing.T) {
	t.Run("Paris spring forward, 23 hours", func(t *testing.T) {
		runSteps(t, mustWindow(t, 2, Day, "Europe/Paris", false), []step{
			{t: "2024-03-31T00:00:00+01:00", cost: 2, remaining: 0, retry: never, reset: 23 * time.Hour, windowFirstDay: "2024-03-31", count: 2},
			{t: "2024-03-31T01:59:59+01:00", cost: 1, limited: true, remaining: 0, retry: 21*time.Hour + time.Second, reset: 21*time.Hour + time.Second},
			{t: "2024-03-31T23:59:59+02:00", cost: 1, limited: true, remaining: 0, retry: time.Second, reset: time.Second},
			// 23 hours after midnight: already 1 April.
			{t: "2024-03-31T22:00:00Z", cost: 1, remaining: 1, retry: never, reset: 24 * time.Hour, windowFirstDay: "2024-04-01", count: 1, prevCount: 2},
		})
	})
	t.Run("Paris fall back, 25 hours", func(t *testing.T) {
		runSteps(t, mustWindow(t, 2, Day, "Europe/Paris", false), []step{
			{t: "2024-10-27T00:00:00+02:00", cost: 2, remaining: 0, retry: never, reset: 25 * time.Hour},
			{t: "2024-10-27T02:30:00+02:00", cost: 1, limited: true, remaining: 0, retry: 22*time.Hour + 30*time.Minute, reset: 22*time.Hour + 30*time.Minute},
			{t: "2024-10-27T02:30:00+01:00", cost: 1, limited: true, remaining: 0, retry: 21*time.Hour + 30*time.Minute, reset: 21*time.Hour + 30*time.Minute},
			{t: "2024-10-28T00:00:00+01:00", cost: 1, remaining: 1, retry: never, reset: 24 * time.Hour, windowFirstDay: "2024-10-28", count: 1, prevCount: 2},
		})
	})
	t.Run("New York spring forward, 23 hours", func(t *testing.T) {
		runSteps(t, mustWindow(t, 2, Day, "America/New_York", false), []step{
			{t: "2024-03-10T00:00:00-05:00", cost: 2, remaining: 0, retry: never, reset: 23 * time.Hour},
			{t: "2024-03-10T03:00:00-04:00", cost: 1, limited: true, remaining: 0, retry: 21 * time.Hour, reset: 21 * time.Hour},
			// 23 hours after midnight it is the next day already.
			{t: "2024-03-11T00:00:00-04:00", cost: 1, remaining: 1, retry: never, reset: 24 * time.Hour, windowFirstDay: "2024-03-11", count: 1, prevCount: 2},
		})
	})
	t.Run("New York fall back, 25 hours", func(t *testing.T) {
		runSteps(t, mustWindow(t, 2, Day, "America/New_York", false), []step{
			{t: "2024-11-03T00:00:00-04:00", cost: 2, remaining: 0, retry: never, reset: 25 * time.Hour},
			// 24 hours after midnight it is still 3 November, 23:00.
			{t: "2024-11-03T23:00:00-05:00", cost: 1, limited: true, remaining: 0, retry: time.Hour, reset: time.Hour},
			{t: "2024-11-04T00:00:00-05:00", cost: 1, remaining: 1, retry: never, reset: 24 * time.Hour},
		})
	})
}

func TestFixedBusinessDays(t *testing.T) {
	runSteps(t, mustWindow(t, 2, BusinessDay, "Europe/Paris", false), []step{
		{t: "2024-03-07T09:00:00+01:00", cost: 2, remaining: 0, retry: never, reset: 15 * time.Hour, windowFirstDay: "2024-03-07", count: 2},
		// Friday's window lasts until Monday 00:00: Saturday counts in it.
		{t: "2024-03-08T09:00:00+01:00", cost: 2, remaining: 0, retry: never, reset: 63 * time.Hour, windowFirstDay: "2024-03-08", count: 2, prevCount: 2},
		{t: "2024-03-09T12:00:00+01:00", cost: 1, limited: true, remaining: 0, retry: 36 * time.Hour, reset: 36 * time.Hour},
		{t: "2024-03-10T23:59:59+01:00", cost: 1, limited: true, remaining: 0, retry: time.Second, reset: time.Second},
		{t: "2024-03-11T00:00:00+01:00", cost: 1, remaining: 1, retry: never, reset: 24 * time.Hour, windowFirstDay: "2024-03-11", count: 1, prevCount: 2},
	})
	// Easter Monday a holiday: Thursday 28 March, then Good Friday's
	// window runs to Tuesday (and loses the spring-forward hour).
	runSteps(t, mustWindow(t, 1, BusinessDay, "Europe/Paris", false, "2024-04-01"), []step{
		{t: "2024-03-29T00:00:00+01:00", cost: 1, remaining: 0, retry: never, reset: 4*day - time.Hour},
		{t: "2024-04-01T23:00:00+02:00", cost: 1, limited: true, remaining: 0, retry: time.Hour, reset: time.Hour},
		{t: "2024-04-02T00:00:00+02:00", cost: 1, remaining: 0, retry: never, reset: day},
	})
}

func TestFixedWeek(t *testing.T) {
	runSteps(t, mustWindow(t, 5, Week, "America/New_York", false), []step{
		// Sunday night of the ISO week 2024-W52, then Monday of 2025-W01.
		{t: "2024-12-29T23:59:00-05:00", cost: 5, remaining: 0, retry: never, reset: time.Minute},
		{t: "2024-12-30T00:00:00-05:00", cost: 1, remaining: 4, retry: never, reset: 7 * day, windowFirstDay: "2024-12-30", count: 1, prevCount: 5},
		// The week of the spring-forward Sunday lasts 167 hours.
		{t: "2025-03-03T00:00:00-05:00", cost: 5, remaining: 0, retry: never, reset: 7*day - time.Hour},
		{t: "2025-03-10T00:00:00-04:00", cost: 1, remaining: 4, retry: never, reset: 7 * day, windowFirstDay: "2025-03-10", count: 1, prevCount: 5},
		// The clock steps back a week: the state counts in the week ahead.
		{t: "2025-03-03T00:00:00-05:00", cost: 5, limited: true, remaining: 4, retry: 14*day - time.Hour, reset: 14*day - time.Hour},
	})
}

// TestSlidingWeighsEachWindowByItsOwnLength: the previous window's count
// slides out over the current window's real length: over a 25-hour day in
// New York, not 24.
func TestSlidingWeighsEachWindowByItsOwnLength(t *testing.T) {
	const rest = 12*time.Hour + 30*time.Minute + 24*time.Hour // from 11:30 on 3 November to the end of the 4th
	runSteps(t, mustWindow(t, 10, Day, "America/New_York", true), []step{
		{t: "2024-11-02T12:00:00-04:00", cost: 10, remaining: 0, retry: never, reset: 12*time.Hour + 25*time.Hour, windowFirstDay: "2024-11-02", count: 10},
		// Midnight: yesterday's 10 weigh in full. One more fits once
		// 10*(end - t) <= 9*25h, 2.5 hours into the 25-hour day.
		{t: "2024-11-03T00:00:00-04:00", cost: 1, limited: true, remaining: 0, retry: 150 * time.Minute, reset: 25 * time.Hour},
		{t: "2024-11-03T01:30:00-05:00", cost: 1, remaining: 0, retry: never, reset: 25*time.Hour - 150*time.Minute + 24*time.Hour, windowFirstDay: "2024-11-03", count: 1, prevCount: 10},
		// Halfway through the day (12.5h in): 1 + 10*0.5 = 6 seen.
		{t: "2024-11-03T11:30:00-05:00", cost: 0, remaining: 4, retry: never, reset: rest},
		{t: "2024-11-03T11:30:00-05:00", cost: 4, remaining: 0, retry: never, reset: rest},
		// 1 more fits once 10*(end - t) <= 4*25h: 10 hours before the end.
		{t: "2024-11-03T11:30:00-05:00", cost: 1, limited: true, remaining: 0, retry: 150 * time.Minute, reset: rest},
		// 6 more never fit today (5 + 6 > 10); on the 4th, today's 5 slide
		// out over 24 hours and 6 fit once 5*(end - t) <= 4*24h: 4.8 hours in.
		{t: "2024-11-03T11:30:00-05:00", cost: 6, limited: true, remaining: 0, retry: 12*time.Hour + 30*time.Minute + 4*time.Hour + 48*time.Minute, reset: rest},
	})
}

// TestStateNamesItsWindowByDate: a state records the date its window
// starts on, not an instant, so read under other rules (a zone database
// whose offset for the zone changed, another zone, another unit) it
// still counts in the window containing that date.
func TestStateNamesItsWindowByDate(t *testing.T) {
	// Written in Paris on 1 February at 00:30 (23:30 UTC on 31 January).
	paris := mustWindow(t, 5, Month, "Europe/Paris", false)
	_, s, _ := paris.Apply(State{}, at(t, "2024-02-01T00:30:00+01:00"), 4)
	if FormatDay(s.Window) != "2024-02-01" {
		t.Fatalf("window %s", FormatDay(s.Window))
	}
	// Read where that instant is still January (as if the zone's offset
	// had moved back two hours: 22:30 on 31 January): February has not begun, so the state is
	// a window ahead of now and keeps counting there until it ends.
	shifted := mustWindow(t, 5, Month, "Etc/GMT+1", false)
	d, _, _ := shifted.Apply(s, at(t, "2024-02-01T00:30:00+01:00"), 2)
	if !d.Limited || d.Remaining != 1 {
		t.Errorf("under other rules: %+v, want the 4 still counted", d)
	}
	// Read at noon on 10 February under the same shifted rules: same window.
	d, _, _ = shifted.Apply(s, at(t, "2024-02-10T12:00:00Z"), 1)
	if d.Limited || d.Remaining != 0 {
		t.Errorf("same window under other rules: %+v, want remaining 0", d)
	}
	// A policy changed from month to year keeps the count; from month to
	// day, the count belongs to 1 February only.
	year := mustWindow(t, 5, Year, "Europe/Paris", false)
	if d, _, _ := year.Apply(s, at(t, "2024-06-01T12:00:00+02:00"), 0); d.Remaining != 1 {
		t.Errorf("read as a year: %+v, want remaining 1", d)
	}
	dayW := mustWindow(t, 5, Day, "Europe/Paris", false)
	if d, _, _ := dayW.Apply(s, at(t, "2024-02-01T12:00:00+01:00"), 0); d.Remaining != 1 {
		t.Errorf("read as a day on 1 February: %+v, want remaining 1", d)
	}
	if d, _, _ := dayW.Apply(s, at(t, "2024-02-02T12:00:00+01:00"), 0); d.Remaining != 5 {
		t.Errorf("read as a day on 2 February: %+v, want remaining 5", d)
	}
}

func TestClockBackwardsKeepsCounting(t *testing.T) {
	for _, sliding := range []bool{false, true} {
		w := mustWindow(t, 3, Month, "Europe/Paris", sliding)
		_, s, _ := w.Apply(State{}, at(t, "2024-03-01T00:00:01+01:00"), 3)
		// The clock steps back into February.
		now := at(t, "2024-02-29T23:00:00+01:00")
		d, next, _ := w.Apply(s, now, 1)
		if !d.Limited || next != s {
			t.Errorf("sliding=%v: %+v, want the March count to hold", sliding, d)
		}
		if want := at(t, "2024-04-01T00:00:00+02:00") - now; !sliding && d.RetryAfter != want {
			t.Errorf("retry %v, want %v (the end of March)", time.Duration(d.RetryAfter), time.Duration(want))
		}
	}
}
