// Command reservepair drives reserve-then-settle pairs against one server
// for bench/reserve.sh: on limitdb RL.RESERVE then RL.SETTLE with the id
// it answered; on redis-server the hand-written equivalent, the reserve
// script (EVALSHA of INCRBY, PEXPIRE on a new counter, DECRBY on a
// denial) then DECRBY by estimate - actual; or, with -mode redis-exact,
// the reserve and settle scripts written with RL.RESERVE's guarantees
// (bench/lua/reserve_exact.lua and settle_exact.lua: ids, a settle that
// counts once, give-backs only to the window charged, tested equal to
// limitdb by TestExactReserveScriptsMatchLimitdb). Each connection pipelines
// -pipeline reserves, then the settles of the admitted ones, closed loop,
// over -keys random keys. It prints "mode,pairs,seconds,pairs_per_s".
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	mode := flag.String("mode", "limitdb", "limitdb (RL.RESERVE/RL.SETTLE), redis (the Lua script and DECRBY) or redis-exact (the two exact scripts)")
	conns := flag.Int("conns", 8, "connections, each a closed loop")
	pipeline := flag.Int("pipeline", 16, "pairs per round trip")
	keys := flag.Int("keys", 10000, "distinct keys")
	duration := flag.Duration("duration", 5*time.Second, "how long to run")
	scripts := flag.String("scripts", "bench/lua", "the folder of the scripts, for the redis modes")
	flag.Parse()
	if err := run(*addr, *mode, *scripts, *conns, *pipeline, *keys, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "reservepair:", err)
		os.Exit(1)
	}
}

func run(addr, mode, scripts string, conns, pipeline, keys int, duration time.Duration) error {
	ctx := context.Background()
	clk := clock.Real()
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: conns, Protocol: 2})
	defer rdb.Close()
	var sha [2]string
	load := func(i int, name string) error {
		src, err := os.ReadFile(filepath.Join(scripts, name))
		if err == nil {
			sha[i], err = rdb.ScriptLoad(ctx, string(src)).Result()
		}
		return err
	}
	var err error
	switch mode {
	case "limitdb":
		// A large budget: the figure is the cost of a pair, not of denials.
		err = rdb.Do(ctx, "RL.POLICY", "SET", "tpm", "fixed_window", 1<<40, "1m").Err()
	case "redis":
		err = load(0, "reserve.lua")
	case "redis-exact":
		if err = load(0, "reserve_exact.lua"); err == nil {
			err = load(1, "settle_exact.lua")
		}
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		return err
	}
	var pairs atomic.Int64
	var firstErr atomic.Value
	start := clk.Now()
	end := start + int64(duration)
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keyNames := make([]string, pipeline)
			for clk.Now() < end {
				for i := range keyNames {
					keyNames[i] = fmt.Sprintf("k%d", rand.IntN(keys))
				}
				n, err := round(ctx, rdb, mode, sha, keyNames)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				pairs.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return err
	}
	secs := float64(clk.Now()-start) / 1e9
	fmt.Printf("%s,%d,%.2f,%.0f\n", mode, pairs.Load(), secs, float64(pairs.Load())/secs)
	return nil
}

// round reserves 100 units on each key in one pipeline, then settles each
// admitted reservation at 40 in a second one; it returns the pairs done.
func round(ctx context.Context, rdb *redis.Client, mode string, sha [2]string, keys []string) (int, error) {
	p := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(keys))
	for i, k := range keys {
		switch mode {
		case "limitdb":
			cmds[i] = p.Do(ctx, "RL.RESERVE", "tpm", k, 100)
		case "redis":
			cmds[i] = p.EvalSha(ctx, sha[0], []string{k}, 100, int64(1)<<40, 60000)
		default:
			cmds[i] = p.EvalSha(ctx, sha[0], exactKeys(k), 100, int64(1)<<40, 60000, 300000)
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		return 0, err
	}
	p = rdb.Pipeline()
	n := 0
	for i, c := range cmds {
		switch mode {
		case "limitdb":
			v, err := c.Slice()
			if err != nil || len(v) != 6 || v[5] == nil {
				return 0, fmt.Errorf("RL.RESERVE: %v %v", v, err)
			}
			p.Do(ctx, "RL.SETTLE", "tpm", keys[i], v[5], 40)
		case "redis":
			if v, err := c.Int64(); err != nil || v != 1 {
				return 0, fmt.Errorf("reserve script: %v %v", v, err)
			}
			p.DecrBy(ctx, keys[i], 60)
		default:
			id, err := c.Text()
			if err != nil {
				return 0, fmt.Errorf("reserve_exact script: %v", err)
			}
			p.EvalSha(ctx, sha[1], exactKeys(keys[i]), id, 40, 60000)
		}
		n++
	}
	if _, err := p.Exec(ctx); err != nil {
		return 0, err
	}
	return n, nil
}

// exactKeys names the exact scripts' two keys for a key: its window
// counter and its open reservations, in one hash slot.
func exactKeys(k string) []string {
	return []string{"{" + k + "}:win", "{" + k + "}:res"}
}
