package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/redis/go-redis/v9"
)

// TestLeases: Acquire, Release and Renew on a key, and their policy forms,
// in both protocols, with the exact Results.
func TestLeases(t *testing.T) {
	t.Parallel()
	addr, clk := serve(t)
	for _, protocol := range []int{2, 3} {
		c := connect(t, addr, protocol)
		ctx := context.Background()
		key := "jobs" + string(rune('0'+protocol))
		l := client.Concurrency{Limit: 2, TTL: 10 * time.Second}
		a, err := c.Acquire(ctx, key, l)
		if err != nil || a.Limited || len(a.LeaseID) != 32 || a.Remaining != 1 || a.ResetAfter != 10*time.Second {
			t.Fatalf("RESP%d acquire: %+v %v", protocol, a, err)
		}
		clk.Advance(time.Second)
		b, err := c.AcquireID(ctx, key, client.Concurrency{Limit: 2, TTL: 1500 * time.Millisecond}, "job-b")
		if err != nil || b.LeaseID != "job-b" {
			t.Fatalf("RESP%d acquire with an id: %+v %v", protocol, b, err)
		}
		full, err := c.Acquire(ctx, key, l)
		want := client.Result{Limited: true, Limit: 2, RetryAfter: 1500 * time.Millisecond, ResetAfter: 9 * time.Second}
		if err != nil || full != want {
			t.Fatalf("RESP%d acquire when full: %+v %v, want %+v", protocol, full, err, want)
		}
		if left, err := c.Renew(ctx, key, "job-b", time.Minute); err != nil || left != time.Minute {
			t.Fatalf("RESP%d renew: %v %v", protocol, left, err)
		}
		if ok, err := c.Release(ctx, key, a.LeaseID); !ok || err != nil {
			t.Fatalf("RESP%d release: %v %v", protocol, ok, err)
		}
		if ok, err := c.Release(ctx, key, a.LeaseID); ok || err != nil {
			t.Fatalf("RESP%d second release: %v %v, want false, nil", protocol, ok, err)
		}
		if _, err := c.Renew(ctx, key, a.LeaseID, time.Second); !errors.Is(err, client.ErrNoLease) {
			t.Fatalf("RESP%d renew of a released lease: %v", protocol, err)
		}
	}
	rdb := redis.NewClient(client.Options(addr))
	t.Cleanup(func() { rdb.Close() })
	c := client.New(rdb)
	ctx := context.Background()
	if err := rdb.Do(ctx, "RL.POLICY", "SET", "inflight", "concurrency", 1, "1m").Err(); err != nil {
		t.Fatal(err)
	}
	p, err := c.AcquirePolicy(ctx, "inflight", "u")
	if err != nil || p.Limited || p.LeaseID == "" {
		t.Fatalf("policy acquire: %+v %v", p, err)
	}
	if d, err := c.RenewPolicy(ctx, "inflight", "u", p.LeaseID, 0); err != nil || d != time.Minute {
		t.Fatalf("policy renew: %v %v", d, err)
	}
	limited, rs, err := c.HitAll(ctx, 1, client.Pair{Policy: "inflight", Key: "v"})
	if err != nil || limited || rs[0].LeaseID == "" {
		t.Fatalf("HitAll on a concurrency policy: %v %+v %v", limited, rs, err)
	}
	if ok, err := c.ReleasePolicy(ctx, "inflight", "u", p.LeaseID); !ok || err != nil {
		t.Fatalf("policy release: %v %v", ok, err)
	}
}
