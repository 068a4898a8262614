package client

import "time"

// Calendar is a calendar window for FixedWindow and SlidingWindow: Unit is
// "day", "week" (ISO, from Monday), "month", "year" or "business_day"
// (Monday to Friday; a weekend counts in the Friday's window), in the IANA
// zone TZ ("" is the server's default, UTC). The server checks both and
// answers an error for a unit or zone it does not know. Holidays belong to
// named policies (RL.POLICY SET ... HOLIDAYS, or the rules file), which
// Policy applies.
type Calendar struct {
	Unit string
	TZ   string
}

// args spells "NAME key limit unit cost [TZ zone]".
func (c Calendar) args(name, key string, limit, cost int64) []any {
	args := []any{name, key, limit, c.Unit, cost}
	if c.TZ != "" {
		args = append(args, "TZ", c.TZ)
	}
	return args
}

// window is the window Approx spreads the limit over: a calendar unit's
// usual length (a 30-day month), or the duration when no unit is set.
func (c Calendar) window(d time.Duration) time.Duration {
	const day = 24 * time.Hour
	switch c.Unit {
	case "":
		return d
	case "week":
		return 7 * day
	case "month":
		return 30 * day
	case "year":
		return 365 * day
	}
	return day
}
