package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/redis/go-redis/v9"
)

func TestPolicies(t *testing.T) {
	t.Parallel()
	addr, clock := serve(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			o := client.Options(addr)
			o.Protocol = proto
			rdb := redis.NewClient(o)
			defer rdb.Close()
			sec, day := fmt.Sprint("sec", proto), fmt.Sprint("day", proto)
			for _, p := range [][]any{{sec, "gcra", 10, "1s"}, {day, "gcra", 3, "1d"}} {
				if err := rdb.Do(ctx, append([]any{"RL.POLICY", "SET"}, p...)...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			c := client.New(rdb)
			walk(t, c, clock, "bob", client.Policy{Name: sec}, []step{
				{0, 1, client.Result{Limit: 10, Remaining: 9, ResetAfter: 100 * ms}},
				{0, 0, client.Result{Limit: 10, Remaining: 9, ResetAfter: 100 * ms}},
				{0, 9, client.Result{Limit: 10, Remaining: 0, ResetAfter: s}},
				{0, 1, client.Result{Limited: true, Limit: 10, RetryAfter: 100 * ms, ResetAfter: s}},
				{0, 11, client.Result{Limited: true, Limit: 10, RetryAfter: client.Never, ResetAfter: s}},
			})

			pairs := []client.Pair{{sec, "user:1"}, {day, "user:1"}, {sec, "ip:1"}}
			for i := 0; i < 3; i++ {
				limited, rs, err := c.HitAll(ctx, 1, pairs...)
				if err != nil || limited || len(rs) != 3 || rs[1].Remaining != int64(2-i) {
					t.Fatalf("call %d: %v %+v %v", i, limited, rs, err)
				}
			}
			limited, rs, err := c.HitAll(ctx, 1, pairs...)
			want := []client.Result{
				{Limit: 10, Remaining: 7, ResetAfter: 300 * ms},
				{Limited: true, Limit: 3, RetryAfter: 8 * time.Hour, ResetAfter: 24 * time.Hour},
				{Limit: 10, Remaining: 7, ResetAfter: 300 * ms},
			}
			if err != nil || !limited || fmt.Sprint(rs) != fmt.Sprint(want) {
				t.Fatalf("denied call: %v %+v %v, want true %+v", limited, rs, err, want)
			}
		})
	}
}
