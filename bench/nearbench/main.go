// Command nearbench hammers one hot key of a gcra policy from many
// goroutines through package client, for bench/nearcache.sh: with
// -near, through a client that keeps denials (client.WithNearCache);
// with -batch n, through one that pipelines concurrent calls
// (client.WithBatching). The key is over its limit almost all the time, as
// an abusive client's key is. It prints, on one line, the calls made, the
// RL.HIT commands the server ran (INFO commandstats, before and after),
// both per second, the fraction of calls that made no round trip, and the
// calls admitted and denied.
//
//	nearbench -addr 127.0.0.1:6379 -near -clients 50 -duration 5s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "limitdb's address")
	near := flag.Bool("near", false, "keep denials in the client (client.WithNearCache)")
	batch := flag.Int("batch", 0, "pipelines in flight when batching concurrent calls (client.WithBatching); 0: no batching")
	clients := flag.Int("clients", 50, "goroutines calling at once")
	limit := flag.Int64("limit", 100, "the policy's requests per period")
	period := flag.Duration("period", time.Second, "the policy's period")
	duration := flag.Duration("duration", 5*time.Second, "how long to run")
	key := flag.String("key", "hot", "the hot key")
	flag.Parse()
	if err := run(clock.Real(), *addr, *near, *batch, *clients, *limit, *period, *duration, *key); err != nil {
		fmt.Fprintln(os.Stderr, "nearbench:", err)
		os.Exit(1)
	}
}

func run(clk clock.Clock, addr string, near bool, batch, clients int, limit int64, period, duration time.Duration, key string) error {
	o := client.Options(addr)
	o.PoolSize = clients
	rdb := redis.NewClient(o)
	defer rdb.Close()
	var opts []client.Option
	if near {
		opts = append(opts, client.WithNearCache(clk))
	}
	if batch > 0 {
		opts = append(opts, client.WithBatching(batch))
	}
	c := client.New(rdb, opts...)
	ctx := context.Background()
	const name = "nearbench"
	if err := c.SetPolicy(ctx, name, client.PolicySpec{Algorithm: "gcra", Limit: limit, Period: period}); err != nil {
		return err
	}
	if _, err := c.Reset(ctx, key, client.Policy{Name: name}); err != nil {
		return err
	}
	before, err := rlHitCalls(ctx, rdb)
	if err != nil {
		return err
	}
	var calls, admitted atomic.Int64
	var firstErr error
	var once sync.Once
	start := clk.Mono()
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for clk.Mono()-start < duration {
				r, err := c.Take(ctx, key, client.Policy{Name: name}, 1)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				calls.Add(1)
				if !r.Limited {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := (clk.Mono() - start).Seconds()
	if firstErr != nil {
		return firstErr
	}
	after, err := rlHitCalls(ctx, rdb)
	if err != nil {
		return err
	}
	n, server := calls.Load(), after-before
	mode := "plain"
	if near {
		mode = "near"
	}
	if batch > 0 {
		mode += "+batch"
	}
	fmt.Printf("mode %s calls %d calls_per_sec %.0f server_rl_hit %d server_per_sec %.0f removed %.4f admitted %d denied %d admitted_per_sec %.1f\n",
		mode, n, float64(n)/elapsed, server, float64(server)/elapsed, 1-float64(server)/float64(max(n, 1)),
		admitted.Load(), n-admitted.Load(), float64(admitted.Load())/elapsed)
	return nil
}

// rlHitCalls reads RL.HIT's calls from INFO commandstats; 0 before the
// first.
func rlHitCalls(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_rl.hit:calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		return strconv.ParseInt(n, 10, 64)
	}
	return 0, nil // RL.HIT has not run yet
}
