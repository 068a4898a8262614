// Command failoverload measures what a Sentinel failover loses of a
// limiter's acknowledged admissions. Through go-redis's FailoverClient it
// sends CL.THROTTLE on -keys keys, each allowing -limit requests over a
// period long enough that nothing refills during the run, and counts the
// admissions each key's replies acknowledged. When -kill names a file
// holding the primary's pid, it kills that process with SIGKILL after
// -before, carries on until the client is served by the promoted replica
// for -after, then peeks every key on the new primary (cost 0) and prints:
//
//	acked=<admissions acknowledged> lost=<acknowledged admissions the new
//	primary does not count> over=<keys admitted past their limit>
//	overby=<admissions past the limits, summed>
//
// A lost admission is one the client was told of that the new primary
// does not hold: a client may then be admitted once more on that key.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/limitdb/limitdb/clock"
)

func main() {
	sentinels := flag.String("sentinels", "127.0.0.1:26379", "comma-separated Sentinel addresses")
	master := flag.String("master", "limits", "the monitored primary's name")
	keys := flag.Int("keys", 500, "keys")
	limit := flag.Int("limit", 100000, "admissions each key allows")
	workers := flag.Int("workers", 16, "concurrent clients")
	before := flag.Duration("before", 3*time.Second, "load before the kill")
	after := flag.Duration("after", 3*time.Second, "load after the new primary answers")
	kill := flag.String("kill", "", "file with the pid of the primary to kill -9 (empty: no kill)")
	prefix := flag.String("prefix", "fo", "key prefix (a new one per run)")
	flag.Parse()

	ctx := context.Background()
	clk := clock.Real()
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: *master, SentinelAddrs: strings.Split(*sentinels, ","),
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()

	// CL.THROTTLE key max_burst count period: limit = max_burst+1 at once,
	// refilling count per period; limit per century refills nothing in a run.
	burst, count, period := strconv.Itoa(*limit-1), strconv.Itoa(*limit), strconv.Itoa(100*365*24*3600)
	acked := make([]int64, *keys)
	var mu sync.Mutex
	var errs int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; ; i += *workers {
				select {
				case <-stop:
					return
				default:
				}
				k := i % *keys
				res, err := rdb.Do(ctx, "CL.THROTTLE", fmt.Sprintf("%s:%d", *prefix, k), burst, count, period).Int64Slice()
				mu.Lock()
				if err != nil {
					errs++
				} else if len(res) == 5 && res[0] == 0 {
					acked[k]++
				}
				mu.Unlock()
				if err != nil {
					clk.Sleep(10 * time.Millisecond)
				}
			}
		}(w)
	}

	clk.Sleep(*before)
	if *kill != "" {
		b, err := os.ReadFile(*kill)
		if err != nil {
			fmt.Fprintln(os.Stderr, "failoverload:", err)
			os.Exit(1)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		old := primaryAddr(ctx, *sentinels, *master)
		syscall.Kill(pid, syscall.SIGKILL)
		killed := clk.Mono()
		for primaryAddr(ctx, *sentinels, *master) == old {
			if (clk.Mono() - killed) > 60*time.Second {
				fmt.Fprintln(os.Stderr, "failoverload: no failover within 60 s")
				os.Exit(1)
			}
			clk.Sleep(50 * time.Millisecond)
		}
		fmt.Fprintf(os.Stderr, "failover after %v\n", (clk.Mono() - killed).Round(time.Millisecond))
	}
	clk.Sleep(*after)
	close(stop)
	wg.Wait()

	var total, lost, overBy int64
	over := 0
	for k := 0; k < *keys; k++ {
		res, err := rdb.Do(ctx, "CL.THROTTLE", fmt.Sprintf("%s:%d", *prefix, k), burst, count, period, "0").Int64Slice()
		if err != nil || len(res) != 5 {
			fmt.Fprintln(os.Stderr, "failoverload: peek:", err)
			os.Exit(1)
		}
		used := res[1] - res[2] // limit - remaining
		total += acked[k]
		if acked[k] > used {
			lost += acked[k] - used
		}
		if acked[k] > int64(*limit) {
			over++
			overBy += acked[k] - int64(*limit)
		}
	}
	fmt.Printf("acked=%d lost=%d over=%d overby=%d errors=%d\n", total, lost, over, overBy, errs)
}

// primaryAddr asks the first Sentinel that answers for the primary.
func primaryAddr(ctx context.Context, sentinels, master string) string {
	for _, a := range strings.Split(sentinels, ",") {
		s := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: 300 * time.Millisecond})
		addr, err := s.GetMasterAddrByName(ctx, master).Result()
		s.Close()
		if err == nil && len(addr) == 2 {
			return addr[0] + ":" + addr[1]
		}
	}
	return ""
}
