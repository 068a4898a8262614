package engine

import (
	"github.com/limitdb/limitdb/engine/calendar"
	"github.com/limitdb/limitdb/engine/limit"
)

// CalendarWindow is FW.INCR and SW.INCR over calendar windows (a day,
// week, month, year or business day in a zone), and the policies with a
// calendar period: A = the first day of the window counted (days since
// 1970-01-01, the zone's civil date), B = that window's count in the low
// 32 bits and the previous window's in the high 32. The window is named by
// its date, not by an instant, so a restart under another zone database
// keeps counting in the same window; Expire is the window's real end in
// the zone (for the sliding form, the end of the window after).
type CalendarWindow struct{ W calendar.Window }

// NewCalendarWindow validates a limit per window of cal, fixed or sliding.
func NewCalendarWindow(limit int64, cal calendar.Calendar, sliding bool) (CalendarWindow, error) {
	w, err := calendar.NewWindow(limit, cal, sliding)
	return CalendarWindow{w}, err
}

// Kind implements Limiter.
func (CalendarWindow) Kind() Kind { return KindCalendarWindow }

// Apply implements Limiter.
func (c CalendarWindow) Apply(ent Entry, now, cost int64) (Entry, limit.Result, bool, error) {
	st := calendar.State{Window: ent.A, Count: int64(uint32(ent.B)), Prev: int64(uint64(ent.B) >> 32)}
	d, next, err := c.W.Apply(st, now, cost)
	if err != nil {
		return ent, limit.Result{}, false, err
	}
	r := result(d.Limited, c.W.Limit, d.Remaining, d.RetryAfter, d.ResetAfter)
	if d.Limited || cost == 0 {
		return ent, r, false, nil
	}
	b := int64(uint64(uint32(next.Count)) | uint64(uint32(next.Prev))<<32)
	return Entry{Kind: KindCalendarWindow, A: next.Window, B: b, Expire: c.W.Expire(next)}, r, true, nil
}
