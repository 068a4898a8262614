// Package calendar implements calendar windows: limits per local day, ISO
// week, month, year or business day in a named IANA time zone, as pure
// functions of (state, now, parameters) in integer Unix nanoseconds. It
// never reads a clock, takes a lock or knows about keys.
//
// A calendar window runs from the first instant of its first local date to
// the first instant of the next window's first date. Dates are the zone's:
// a day is midnight to midnight local time, so it lasts 23 hours on the day
// clocks spring forward and 25 on the day they fall back; where midnight
// itself is skipped (a zone that changes its clocks at 00:00) the day
// begins at the first instant that shows its date, and where midnight is
// repeated it begins at the first of the two.
//
// Windows are named by the civil date of their first day, counted in days
// since 1970-01-01 (a "day number"), never by an instant: a state written
// under one version of the zone database keeps counting in the same window
// under another, whatever the new rules say about when that window's
// midnight falls.
//
// The zone database is the one compiled into the program (time/tzdata,
// imported here), so a host with no zoneinfo installed knows every zone.
package calendar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	_ "time/tzdata" // every zone, on hosts without /usr/share/zoneinfo
)

// Errors for calendars that cannot be built.
var (
	ErrInvalid  = errors.New("invalid calendar window")
	ErrOverflow = errors.New("instant outside the calendar's range (years 1900 to 2199)")
)

// Unit is the length of a calendar window.
type Unit uint8

// The calendar units. The zero Unit is none: a duration, not a calendar.
const (
	Day         Unit = iota + 1 // midnight to midnight, local time
	Week                        // ISO week: Monday 00:00 to the next Monday 00:00
	Month                       // the 1st 00:00 to the next month's 1st 00:00
	Year                        // 1 January 00:00 to the next 1 January 00:00
	BusinessDay                 // a business day's 00:00 to the next business day's 00:00
)

var unitNames = [...]string{"", "day", "week", "month", "year", "business_day"}

// String is the unit's name as rules files and commands spell it.
func (u Unit) String() string {
	if int(u) < len(unitNames) {
		return unitNames[u]
	}
	return "unknown"
}

// ParseUnit maps a unit's name (any case) to the unit; false for anything
// else (a duration such as 30d is not a calendar unit).
func ParseUnit(s string) (Unit, bool) {
	for i, n := range unitNames[1:] {
		if strings.EqualFold(s, n) {
			return Unit(i + 1), true
		}
	}
	return 0, false
}

// Units lists the unit names, for error messages.
const Units = "day, week, month, year or business_day"

// MaxHolidays bounds a business-day calendar's holidays.
const MaxHolidays = 1000

// The range of instants a calendar accepts: 1900-01-01 to 2200-01-01 UTC,
// so that the next window's end (a year and a day on) is an int64 of
// nanoseconds.
const (
	minInstant = -2208988800 * int64(time.Second)
	maxInstant = 7258118400 * int64(time.Second)
	minDay     = -25567 // 1900-01-01
	maxDay     = 84006  // 2200-01-01
)

// Calendar is a unit in a zone, with a business-day calendar's holidays.
// The zero Calendar is invalid; build one with New.
type Calendar struct {
	unit     Unit
	zone     string
	loc      *time.Location
	holidays *[]int64 // day numbers, sorted, each once; a pointer so a Calendar compares with ==
	memo     *memo    // the bounds of the window last asked for, shared by the copies
}

// Bounds are a window's instants: where it starts, ends, and where the
// window after it ends.
type Bounds struct {
	W                 int64 // the window's first day
	Start, End, After int64
}

// memo keeps the bounds of the window last asked for. Finding a boundary
// reads the zone's rules, which past the zone's last listed transition
// means parsing its rule string, several times per boundary: a few
// microseconds. Nearly every request falls in the window of the one before
// it, so the memo answers it with one atomic load, for every copy of the
// Calendar; a request in another window replaces it.
type memo struct{ b atomic.Pointer[Bounds] }

// New builds a calendar of unit in the IANA zone named zone ("" is UTC).
// Holidays are dates written 2006-01-02, allowed only with BusinessDay:
// they are not business days. An unknown zone, the server's "Local" zone
// (not a name every server resolves alike) and a malformed date are errors.
func New(unit Unit, zone string, holidays []string) (Calendar, error) {
	if unit < Day || unit > BusinessDay {
		return Calendar{}, fmt.Errorf("%w: unknown unit (use %s)", ErrInvalid, Units)
	}
	if zone == "" {
		zone = "UTC"
	}
	if strings.EqualFold(zone, "local") {
		return Calendar{}, fmt.Errorf("%w: time zone %q is the server's own: name an IANA zone such as Europe/Paris", ErrInvalid, zone)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return Calendar{}, fmt.Errorf("%w: unknown time zone %q (an IANA name such as Europe/Paris or America/New_York)", ErrInvalid, zone)
	}
	c := Calendar{unit: unit, zone: zone, loc: loc, memo: &memo{}}
	if len(holidays) > 0 && unit != BusinessDay {
		return Calendar{}, fmt.Errorf("%w: holidays apply only to business_day", ErrInvalid)
	}
	if len(holidays) > MaxHolidays {
		return Calendar{}, fmt.Errorf("%w: at most %d holidays, got %d", ErrInvalid, MaxHolidays, len(holidays))
	}
	var days []int64
	for _, h := range holidays {
		d, err := time.Parse(time.DateOnly, h)
		if err != nil {
			return Calendar{}, fmt.Errorf("%w: holiday %q is not a date such as 2025-12-25", ErrInvalid, h)
		}
		n := DayNumber(d.Date())
		if n < minDay || n >= maxDay {
			return Calendar{}, fmt.Errorf("%w: holiday %q is outside the years 1900 to 2199", ErrInvalid, h)
		}
		days = append(days, n)
	}
	if len(days) > 0 {
		slices.Sort(days)
		days = slices.Compact(days)
		c.holidays = &days
	}
	return c, nil
}

// Unit is the calendar's unit.
func (c Calendar) Unit() Unit { return c.unit }

// Zone is the name of the calendar's zone, as given to New.
func (c Calendar) Zone() string { return c.zone }

// Holidays are the business-day calendar's holidays, as 2006-01-02 dates
// in order.
func (c Calendar) Holidays() []string {
	if c.holidays == nil {
		return nil
	}
	out := make([]string, len(*c.holidays))
	for i, h := range *c.holidays {
		out[i] = FormatDay(h)
	}
	return out
}

// Nominal is the unit's usual length, for estimates that need one
// duration (a client's local stand-in limiter): a 30-day month, a 365-day
// year. Never used to find a boundary.
func (u Unit) Nominal() time.Duration {
	switch u {
	case Week:
		return 7 * 24 * time.Hour
	case Month:
		return 30 * 24 * time.Hour
	case Year:
		return 365 * 24 * time.Hour
	}
	return 24 * time.Hour
}

// DayNumber is the civil date's day number: days since 1970-01-01
// (negative before), in the proleptic Gregorian calendar.
func DayNumber(y int, m time.Month, d int) int64 {
	// Howard Hinnant's days_from_civil: years start in March, so the leap
	// day is the last of its year.
	yy := int64(y)
	if m <= 2 {
		yy--
	}
	era := yy / 400
	if yy < 0 && yy%400 != 0 {
		era--
	}
	yoe := yy - era*400
	mp := (int64(m) + 9) % 12
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civil is DayNumber's inverse.
func civil(n int64) (int, time.Month, int) {
	z := n + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := (mp+2)%12 + 1
	y := yoe + era*400
	if m <= 2 {
		y++
	}
	return int(y), time.Month(m), int(d)
}

// FormatDay spells a day number as 2006-01-02.
func FormatDay(n int64) string {
	y, m, d := civil(n)
	return fmt.Sprintf("%04d-%02d-%02d", y, int(m), d)
}

// weekday is 0 for Monday to 6 for Sunday (1970-01-01 was a Thursday).
func weekday(n int64) int64 {
	w := (n + 3) % 7
	if w < 0 {
		w += 7
	}
	return w
}

// business reports whether day n is a business day: Monday to Friday and
// not a holiday.
func (c Calendar) business(n int64) bool {
	if weekday(n) >= 5 {
		return false
	}
	if c.holidays == nil {
		return true
	}
	_, holiday := slices.BinarySearch(*c.holidays, n)
	return !holiday
}

// localDay is the day number of instant t's local date.
func (c Calendar) localDay(t int64) int64 {
	return DayNumber(time.Unix(0, t).In(c.loc).Date())
}

// Window is the window containing instant t, named by its first day.
func (c Calendar) Window(t int64) int64 {
	if c.memo != nil {
		if b := c.memo.b.Load(); b != nil && b.Start <= t && t < b.End {
			return b.W
		}
	}
	return c.windowOf(c.localDay(t))
}

// Bounds are the instants of the window starting on day w.
func (c Calendar) Bounds(w int64) Bounds {
	if c.memo != nil {
		if b := c.memo.b.Load(); b != nil && b.W == w {
			return *b
		}
	}
	next := c.Next(w)
	b := Bounds{W: w, Start: c.Start(w), End: c.Start(next), After: c.Start(c.Next(next))}
	if c.memo != nil {
		c.memo.b.Store(&b)
	}
	return b
}

// windowOf is the first day of the window containing day n. A business
// day's window runs until the next business day begins: a Saturday, a
// Sunday or a holiday counts in the last business day before it.
func (c Calendar) windowOf(n int64) int64 {
	switch c.unit {
	case Week:
		return n - weekday(n)
	case Month:
		y, m, _ := civil(n)
		return DayNumber(y, m, 1)
	case Year:
		y, _, _ := civil(n)
		return DayNumber(y, 1, 1)
	case BusinessDay:
		// At most len(holidays) + 2 days in a row are not business days.
		for !c.business(n) {
			n--
		}
	}
	return n
}

// Next is the first day of the window after the one starting on day w.
func (c Calendar) Next(w int64) int64 {
	switch c.unit {
	case Week:
		return w + 7
	case Month:
		y, m, _ := civil(w)
		return DayNumber(y, m+1, 1) // DayNumber takes month 13 as January
	case Year:
		y, _, _ := civil(w)
		return DayNumber(y+1, 1, 1)
	case BusinessDay:
		n := w + 1
		for !c.business(n) {
			n++
		}
		return n
	}
	return w + 1
}

// Start is the first instant of day n in the calendar's zone: its local
// midnight, or where the zone skipped midnight that day the transition
// that skipped it, or where it showed midnight twice the first of them.
func (c Calendar) Start(n int64) int64 {
	y, m, d := civil(n)
	t := time.Date(y, m, d, 0, 0, 0, 0, c.loc)
	if DayNumber(t.Date()) < n {
		// Midnight fell in a gap and time.Date chose the side before it:
		// the date begins where that zone period ends.
		if _, end := t.ZoneBounds(); !end.IsZero() {
			t = end
		}
	} else if begin, _ := t.ZoneBounds(); !begin.IsZero() {
		// Midnight repeated: if the zone period before t's also shows
		// date n, the date began in that period, at its midnight.
		p := begin.Add(-1)
		if DayNumber(p.Date()) == n {
			_, off := p.Zone()
			t = time.Unix(n*86400-int64(off), 0)
		}
	}
	return t.UnixNano()
}

// valid reports whether day number n lies in the calendar's range.
func valid(n int64) bool { return n >= minDay && n < maxDay }
