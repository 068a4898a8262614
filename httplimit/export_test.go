package httplimit

import (
	"context"
	"time"
)

// SetLocalClock lets tests step a Local's clock.
func SetLocalClock(l *Local, now func() time.Time) { l.now = now }

// SetWait replaces the middleware's sleep for LB.QUEUE delays.
func SetWait(m *Middleware, wait func(context.Context, time.Duration) error) { m.wait = wait }
