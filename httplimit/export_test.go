package httplimit

import "time"

// SetLocalClock lets tests step a Local's clock.
func SetLocalClock(l *Local, now func() time.Time) { l.now = now }
