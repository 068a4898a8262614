package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/redis/go-redis/v9"
)

// TestReserveSettle: an estimate reserved, settled lower (given back),
// settled again (nothing changes), a denial with no reservation, and a
// settle after the ttl.
func TestReserveSettle(t *testing.T) {
	t.Parallel()
	addr, clk := serve(t)
	c := connect(t, addr, 3)
	ctx := context.Background()
	rdb := redis.NewClient(client.Options(addr))
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Do(ctx, "RL.POLICY", "SET", "tpm", "token_bucket", 1000, "1m").Err(); err != nil {
		t.Fatal(err)
	}
	r, res, err := c.Reserve(ctx, "tpm", "tenant", 800, 2*time.Second)
	if err != nil || res == nil || r.Remaining != 200 {
		t.Fatalf("reserve: %+v %+v %v", r, res, err)
	}
	r, settled, err := c.Settle(ctx, *res, 300)
	if err != nil || !settled || r.Remaining != 700 || r.Limited {
		t.Fatalf("settle: %+v settled %v, %v; want remaining 700, settled", r, settled, err)
	}
	if r, settled, err = c.Settle(ctx, *res, 300); err != nil || settled || r.Remaining != 700 {
		t.Fatalf("settle again: %+v settled %v, %v; want nothing changed", r, settled, err)
	}
	if r, res, err = c.Reserve(ctx, "tpm", "tenant", 900, 0); err != nil || res != nil || !r.Limited {
		t.Fatalf("over the limit: %+v %+v %v; want denied, no reservation", r, res, err)
	}
	_, res, _ = c.Reserve(ctx, "tpm", "tenant", 100, time.Second)
	clk.Advance(time.Second)
	if _, _, err = c.Settle(ctx, *res, 0); !errors.Is(err, client.ErrReservationExpired) {
		t.Fatalf("settle past the ttl: %v, want ErrReservationExpired", err)
	}
}
