package httplimit

import (
	"context"
	"time"
)

// SetWait replaces the middleware's sleep for LB.QUEUE delays.
func SetWait(m *Middleware, wait func(context.Context, time.Duration) error) { m.wait = wait }
