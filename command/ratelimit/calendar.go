package ratelimit

import (
	"sync"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/calendar"
)

// Calendar windows on the window commands: FW.INCR and SW.INCR take a
// calendar unit (day, week, month, year, business_day) where they take a
// window, and a TZ zone option. SL.INCR does not: a log exists to be exact
// over a rolling span, and a calendar window's count is exact already.

// calendars caches the calendars the window commands have resolved, by
// unit and zone name: resolving a zone reads and parses its rules, which
// is too slow for every request. Only zones that resolved are kept, so the
// cache is bounded by the zone database's few hundred names per unit.
type calendars struct {
	mu sync.RWMutex
	m  map[calendarKey]calendar.Calendar
}

type calendarKey struct {
	unit calendar.Unit
	zone string
}

// get is the calendar of unit in zone, resolved once.
func (cs *calendars) get(unit calendar.Unit, zone []byte) (calendar.Calendar, error) {
	cs.mu.RLock()
	cal, ok := cs.m[calendarKey{unit, string(zone)}]
	cs.mu.RUnlock()
	if ok {
		return cal, nil
	}
	cal, err := calendar.New(unit, string(zone), nil)
	if err != nil {
		return cal, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[calendarKey]calendar.Calendar{}
	}
	cs.m[calendarKey{unit, string(zone)}] = cal
	return cal, nil
}

// calendarUnit reads a window argument that names a calendar unit.
func calendarUnit(b []byte) (calendar.Unit, bool) {
	for u := calendar.Day; u <= calendar.BusinessDay; u++ {
		if command.EqualFold(b, u.String()) {
			return u, true
		}
	}
	return 0, false
}

// windowOptions are a window command's arguments after the window: the
// cost, PRECISION n (SW.INCR) and TZ zone, in any order.
type windowOptions struct {
	cost, precision int64
	zone            []byte
}

// parseWindowOptions reads args[4:]; precision says whether PRECISION is
// accepted.
func parseWindowOptions(args [][]byte, precision bool) (o windowOptions, err error) {
	o.cost, o.precision = 1, 1
	haveCost := false
	for i := 4; i < len(args); i++ {
		precisionOpt, tzOpt := precision && command.EqualFold(args[i], "precision"), command.EqualFold(args[i], "tz")
		switch {
		case (precisionOpt || tzOpt) && i+1 == len(args), tzOpt && o.zone != nil:
			err = command.ErrSyntax
		case precisionOpt:
			i++
			o.precision, err = command.ParseAtLeast(args[i], 1, "precision")
		case tzOpt:
			i++
			o.zone = args[i]
		case !haveCost:
			haveCost = true
			o.cost, err = command.ParseAtLeast(args[i], 0, "cost")
		default:
			err = command.ErrSyntax
		}
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// windowArgs are a window command's arguments: the limit, the window (a
// duration in nanoseconds, or a calendar unit) and the options.
type windowArgs struct {
	limit, period int64
	unit          calendar.Unit
	windowOptions
}

// Errors of the calendar options, worded for the wire.
const (
	errTZWithoutCalendar = command.WireError("ERR TZ applies only to a calendar window: day, week, month, year or business_day")
	errCalendarPrecision = command.WireError("ERR PRECISION applies only to a window of a duration: a calendar window is weighed against the one before it whole")
	errLogCalendar       = command.WireError("ERR SL.INCR takes a window of a duration: for calendar windows use FW.INCR or SW.INCR")
)

// parseWindow reads "key limit window [options]" (FW.INCR, SW.INCR).
func parseWindow(args [][]byte, precision bool) (a windowArgs, err error) {
	if a.limit, err = command.ParseAtLeast(args[2], 1, "limit"); err != nil {
		return a, err
	}
	if u, ok := calendarUnit(args[3]); ok {
		a.unit = u
	} else if a.period, err = command.ParseDuration(args[3], "window"); err != nil {
		return a, err
	}
	if a.windowOptions, err = parseWindowOptions(args, precision); err != nil {
		return a, err
	}
	switch {
	case a.zone != nil && a.unit == 0:
		return a, errTZWithoutCalendar
	case a.unit != 0 && a.precision != 1:
		return a, errCalendarPrecision
	}
	return a, nil
}

// calendarWindow builds the limiter of a calendar window command.
func (f *Family) calendarWindow(a windowArgs, sliding bool) (engine.CalendarWindow, error) {
	cal, err := f.calendars.get(a.unit, a.zone)
	if err != nil {
		return engine.CalendarWindow{}, err
	}
	return engine.NewCalendarWindow(a.limit, cal, sliding)
}
