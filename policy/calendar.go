package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/calendar"
	"github.com/limitdb/limitdb/engine/limit"
)

// CalendarPeriod is a policy's calendar window: Unit in the IANA zone
// Timezone ("" is UTC), with Holidays (business_day only) written as
// comma-separated 2006-01-02 dates. The zero CalendarPeriod is none: the
// policy's window is its Period.
//
// Calendar periods apply to fixed_window and sliding_window, the
// algorithms that count per window; a rate (gcra, the buckets) has no
// boundary to put on a calendar, and a sliding log is exact over a rolling
// span already.
type CalendarPeriod struct {
	Unit     calendar.Unit
	Timezone string
	Holidays string
}

// HolidayList is Holidays as a list ("" is none).
func (c CalendarPeriod) HolidayList() []string {
	if c.Holidays == "" {
		return nil
	}
	return strings.Split(c.Holidays, ",")
}

// Zone is the period's zone name as applied: UTC when none is given.
func (c CalendarPeriod) Zone() string {
	if c.Timezone == "" {
		return "UTC"
	}
	return c.Timezone
}

// calendar resolves the period's zone and holidays.
func (c CalendarPeriod) calendar() (calendar.Calendar, error) {
	return calendar.New(c.Unit, c.Timezone, c.HolidayList())
}

// PeriodString spells the policy's period: a calendar unit's name, or
// the duration.
func (p Policy) PeriodString() string {
	if p.Calendar.Unit != 0 {
		return p.Calendar.Unit.String()
	}
	return limit.FormatDuration(p.Period)
}

// validateCalendar checks the calendar fields: a unit only on the window
// algorithms and without a Period, a zone and holidays that resolve, and
// neither without a unit.
func (p Policy) validateCalendar() error {
	c := p.Calendar
	if c.Unit == 0 {
		switch {
		case c.Timezone != "":
			return &FieldError{"timezone", "applies only to a calendar period (" + calendar.Units + ")"}
		case c.Holidays != "":
			return &FieldError{"holidays", "apply only to the business_day period"}
		}
		return nil
	}
	if p.Algorithm != FixedWindow && p.Algorithm != SlidingWindow {
		return &FieldError{"period", fmt.Sprintf("a calendar period (%s) applies to fixed_window and sliding_window only, not %s", c.Unit, p.Algorithm)}
	}
	if p.Period != 0 {
		return &FieldError{"period", "a calendar period has no duration"}
	}
	if _, err := c.calendar(); err != nil {
		field := "timezone"
		if c.Holidays != "" && strings.Contains(err.Error(), "holiday") {
			field = "holidays"
		}
		return &FieldError{field, strings.TrimPrefix(err.Error(), calendar.ErrInvalid.Error()+": ")}
	}
	return nil
}

// newCalendarLimiter builds a calendar window policy's limiter.
func newCalendarLimiter(p Policy) (engine.Limiter, error) {
	cal, err := p.Calendar.calendar()
	if err != nil {
		return nil, err
	}
	l, err := engine.NewCalendarWindow(p.Limit, cal, p.Algorithm == SlidingWindow)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), calendar.ErrInvalid.Error()+": "))
	}
	return l, nil
}
