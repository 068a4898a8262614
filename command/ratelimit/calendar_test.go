package ratelimit_test

import (
	"strconv"
	"testing"
	"time"
)

// TestCalendarWindowCommands walks FW.INCR and SW.INCR with calendar
// windows through fixed instants: t0 is 31 October 2024, 23:30 in Paris
// (22:30 UTC), half an hour before November begins there and an hour and a
// half before it begins in UTC.
func TestCalendarWindowCommands(t *testing.T) {
	t.Parallel()
	c, clk, _ := newLocal(t)
	t0 := time.Date(2024, 10, 31, 22, 30, 0, 0, time.UTC).UnixNano()
	clk.Advance(time.Duration(t0 - clk.Now()))
	const hour, day = 3_600_000, 86_400_000
	for i, st := range []struct {
		advance time.Duration
		args    []string
		want    string
	}{
		{0, []string{"FW.INCR", "m", "2", "month", "2", "TZ", "Europe/Paris"}, "*5\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:1800000\r\n"},
		{0, []string{"FW.INCR", "m", "2", "month", "TZ", "Europe/Paris"}, "*5\r\n:1\r\n:2\r\n:0\r\n:1800000\r\n:1800000\r\n"},
		{0, []string{"FW.INCR", "m", "2", "1m"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		// UTC (the default zone) is still in October for an hour and a half.
		{0, []string{"FW.INCR", "u", "5", "MONTH"}, "*5\r\n:0\r\n:5\r\n:4\r\n:-1\r\n:5400000\r\n"},
		// t1 = 1 November 00:00 in Paris: November has 30 days of 24 hours.
		{30 * time.Minute, []string{"FW.INCR", "m", "2", "month", "TZ", "Europe/Paris"}, "*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:" + itoa(30*day) + "\r\n"},
		// A business day: Friday 1 November's window runs to Monday.
		{0, []string{"FW.INCR", "b", "1", "business_day", "TZ", "Europe/Paris"}, "*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:" + itoa(3*day) + "\r\n"},
		// A sliding day in New York: t1 is 19:00 on 31 October there. The
		// count is seen until 1 November has passed too (5h + 24h); one
		// more fits on 1 November once 4*(end - t) <= 3*24h, at 06:00.
		{0, []string{"SW.INCR", "s", "4", "day", "4", "TZ", "America/New_York"}, "*5\r\n:0\r\n:4\r\n:0\r\n:-1\r\n:" + itoa(29*hour) + "\r\n"},
		{0, []string{"SW.INCR", "s", "4", "day", "TZ", "America/New_York", "1"}, "*5\r\n:1\r\n:4\r\n:0\r\n:" + itoa(11*hour) + "\r\n:" + itoa(29*hour) + "\r\n"},
		// Errors.
		{0, []string{"FW.INCR", "x", "1", "month", "TZ", "Mars/Olympus_Mons"}, "-ERR invalid calendar window: unknown time zone \"Mars/Olympus_Mons\" (an IANA name such as Europe/Paris or America/New_York)\r\n"},
		{0, []string{"FW.INCR", "x", "1", "month", "TZ", "Local"}, "-ERR invalid calendar window: time zone \"Local\" is the server's own: name an IANA zone such as Europe/Paris\r\n"},
		{0, []string{"FW.INCR", "x", "1", "1m", "TZ", "Europe/Paris"}, "-ERR TZ applies only to a calendar window: day, week, month, year or business_day\r\n"},
		{0, []string{"FW.INCR", "x", "1", "month", "TZ"}, "-ERR syntax error\r\n"},
		{0, []string{"FW.INCR", "x", "1", "month", "1", "2"}, "-ERR syntax error\r\n"},
		{0, []string{"FW.INCR", "x", "4294967296", "month"}, "-ERR invalid calendar window: limit must be between 1 and 4294967295, got 4294967296\r\n"},
		{0, []string{"SW.INCR", "x", "1", "month", "PRECISION", "4"}, "-ERR PRECISION applies only to a window of a duration: a calendar window is weighed against the one before it whole\r\n"},
		{0, []string{"SW.INCR", "x", "1", "month", "TZ", "UTC", "TZ", "UTC"}, "-ERR syntax error\r\n"},
		{0, []string{"SL.INCR", "x", "1", "month"}, "-ERR SL.INCR takes a window of a duration: for calendar windows use FW.INCR or SW.INCR\r\n"},
	} {
		clk.Advance(st.advance)
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestCalendarPolicyCommands: RL.POLICY SET takes a calendar period with TZ
// and HOLIDAYS, GET describes it, and RL.HIT counts to the zone's boundary.
func TestCalendarPolicyCommands(t *testing.T) {
	t.Parallel()
	c, clk, _ := newLocal(t)
	// t0: Friday 7 March 2025, 23:00 in New York (04:00 UTC on the 8th).
	clk.Advance(time.Duration(time.Date(2025, 3, 8, 4, 0, 0, 0, time.UTC).UnixNano() - clk.Now()))
	for i, st := range []struct {
		advance time.Duration
		args    []string
		want    string
	}{
		{0, []string{"RL.POLICY", "SET", "bd", "fixed_window", "1", "business_day", "TZ", "America/New_York", "HOLIDAYS", "2025-03-10"}, "+OK\r\n"},
		// Friday's window runs past the weekend and the Monday holiday, to
		// Tuesday 00:00, and loses the hour clocks spring forward on Sunday.
		{0, []string{"RL.HIT", "bd", "u"}, "*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:" + itoa((3*24)*3_600_000) + "\r\n"},
		{0, []string{"RL.HIT", "bd", "u"}, "*5\r\n:1\r\n:1\r\n:0\r\n:" + itoa((3*24)*3_600_000) + "\r\n:" + itoa((3*24)*3_600_000) + "\r\n"},
		{0, []string{"RL.POLICY", "GET", "bd"}, "*24\r\n$4\r\nname\r\n$2\r\nbd\r\n$9\r\nalgorithm\r\n$12\r\nfixed_window\r\n$5\r\nlimit\r\n:1\r\n$6\r\nperiod\r\n$12\r\nbusiness_day\r\n" +
			"$5\r\nburst\r\n:1\r\n$6\r\nshadow\r\n:0\r\n$6\r\nsource\r\n$7\r\nruntime\r\n$8\r\nadmitted\r\n:1\r\n$6\r\ndenied\r\n:1\r\n$13\r\nshadow_denied\r\n:0\r\n" +
			"$8\r\ntimezone\r\n$16\r\nAmerica/New_York\r\n$8\r\nholidays\r\n*1\r\n$10\r\n2025-03-10\r\n"},
		{0, []string{"RL.POLICY", "SET", "m", "sliding_window", "5", "month", "TZ", "Europe/Pariss"}, "-ERR invalid timezone: unknown time zone \"Europe/Pariss\" (an IANA name such as Europe/Paris or America/New_York)\r\n"},
		{0, []string{"RL.POLICY", "SET", "m", "gcra", "5", "month"}, "-ERR invalid period: a calendar period (month) applies to fixed_window and sliding_window only, not gcra\r\n"},
		{0, []string{"RL.POLICY", "SET", "m", "fixed_window", "5", "1h", "TZ", "Europe/Paris"}, "-ERR invalid timezone: applies only to a calendar period (day, week, month, year or business_day)\r\n"},
		{0, []string{"RL.POLICY", "SET", "m", "fixed_window", "5", "month", "HOLIDAYS", "2025-12-25"}, "-ERR invalid holidays: holidays apply only to business_day\r\n"},
		{0, []string{"RL.POLICY", "SET", "m", "fixed_window", "5", "month", "TZ"}, "-ERR syntax error\r\n"},
	} {
		clk.Advance(st.advance)
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
	}
}
