package tests

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestExactUnderContention has many clients hit one key at the same frozen
// instant through every algorithm: exactly the limit is admitted, never one
// more or one less, and every denial says so. Run it with -race.
func TestExactUnderContention(t *testing.T) {
	t.Parallel()
	const clients, callsEach = 40, 5 // 200 calls for a limit of 100
	cases := []struct {
		cmd   string
		args  []any // after the key
		limit int64
	}{
		{"CL.THROTTLE", []any{99, 1, 3600}, 100}, // max_burst + 1
		{"GCRA", []any{99, 1, 3600}, 100},
		{"TB.TAKE", []any{100, 1, "1h"}, 100},
		{"LB.QUEUE", []any{100, 1, "1h"}, 100},
		{"FW.INCR", []any{100, "1h"}, 100},
		{"SW.INCR", []any{100, "1h"}, 100},
		{"SL.INCR", []any{100, "1h"}, 100},
		// RL.HIT's key comes after the policy name: args[0] is the policy.
		{"RL.HIT", []any{"contention-sliding-log"}, 100},
		{"RL.HIT", []any{"contention-token-bucket"}, 100},
		{"RL.HIT", []any{"contention-gcra"}, 100},
	}
	ts := startServer(t)
	admin := ts.client(t, 2)
	for name, algo := range map[string]string{"contention-sliding-log": "sliding_log", "contention-token-bucket": "token_bucket", "contention-gcra": "gcra"} {
		require.NoError(t, admin.Do(ctx, "RL.POLICY", "SET", name, algo, 100, "1h").Err())
		t.Cleanup(func() { admin.Do(ctx, "RL.POLICY", "DEL", name) })
	}
	conns := make([]*redis.Client, clients)
	for i := range conns {
		conns[i] = redis.NewClient(&redis.Options{Addr: ts.addr, PoolSize: 1})
		defer conns[i].Close()
	}
	for _, tc := range cases {
		name := tc.cmd
		if tc.cmd == "RL.HIT" {
			name += " " + tc.args[0].(string)
		}
		t.Run(name, func(t *testing.T) {
			key := "contended:" + name
			var admitted, denied atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, c := range conns {
				wg.Add(1)
				go func(c *redis.Client) {
					defer wg.Done()
					<-start
					for i := 0; i < callsEach; i++ {
						args := append([]any{tc.cmd, key}, tc.args...)
						if tc.cmd == "RL.HIT" {
							args = []any{tc.cmd, tc.args[0], key}
						}
						v, err := c.Do(ctx, args...).Slice()
						if err != nil {
							t.Error(err)
							return
						}
						if v[0].(int64) == 0 {
							admitted.Add(1)
						} else {
							denied.Add(1)
						}
					}
				}(c)
			}
			close(start)
			wg.Wait()
			if admitted.Load() != tc.limit || denied.Load() != clients*callsEach-tc.limit {
				t.Errorf("admitted %d, denied %d; want exactly %d admitted of %d", admitted.Load(), denied.Load(), tc.limit, clients*callsEach)
			}
		})
	}

	t.Run("INCR", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Add(1)
			go func(c *redis.Client) {
				defer wg.Done()
				for i := 0; i < callsEach*5; i++ {
					if err := c.Incr(ctx, "contended:counter").Err(); err != nil {
						t.Error(err)
						return
					}
				}
			}(c)
		}
		wg.Wait()
		if got, want := conns[0].Get(ctx, "contended:counter").Val(), fmt.Sprint(clients*callsEach*5); got != want {
			t.Errorf("counter = %s, want %s", got, want)
		}
	})
}
