package tests

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestMultiMatchesRedis runs the same transactions, queue-time errors and
// all, on one connection to redis-server and one to limitdb.
func TestMultiMatchesRedis(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ours := ts.client(t, 2).Conn()
	theirs := startRedis(t).Conn()
	t.Cleanup(func() { ours.Close(); theirs.Close() })
	script := [][]any{
		{"EXEC"}, {"DISCARD"},
		{"MULTI"}, {"MULTI"}, {"SET", "a", "1"}, {"WATCH", "a"}, {"INCR", "a"}, {"GET", "a"}, {"EXEC"},
		{"MULTI"}, {"SET", "s", "abc"}, {"INCR", "s"}, {"SET", "t", "1", "EX", 0}, {"GET", "s"}, {"EXEC"},
		{"MULTI"}, {"NOSUCH"}, {"SET", "a", "2"}, {"EXEC"}, {"GET", "a"},
		{"MULTI"}, {"SET", "a"}, {"SET", "a", "3"}, {"EXEC"}, {"GET", "a"},
		{"MULTI"}, {"SET", "a", "4"}, {"DISCARD"}, {"GET", "a"}, {"EXEC"},
		{"MULTI"}, {"EXEC"},
		{"WATCH", "w"}, {"SET", "w", "changed"}, {"MULTI"}, {"SET", "w", "tx"}, {"EXEC"}, {"GET", "w"},
		{"WATCH", "w"}, {"MULTI"}, {"SET", "w", "tx"}, {"EXEC"}, {"GET", "w"},
		{"WATCH", "w"}, {"UNWATCH"}, {"SET", "w", "again"}, {"MULTI"}, {"GET", "w"}, {"EXEC"},
		{"WATCH", "w"}, {"DEL", "w"}, {"MULTI"}, {"PING"}, {"EXEC"},
		{"MULTI"}, {"SET", "k", "1", "NX", "EX", 60}, {"INCRBY", "k", 5}, {"EXPIRE", "k", 60, "NX"}, {"EXEC"},
		{"WATCH"},
	}
	for i, cmd := range script {
		want := reply(theirs.Do(ctx, cmd...).Result())
		got := reply(ours.Do(ctx, cmd...).Result())
		if got != want {
			t.Errorf("step %d %v: limitdb %s, redis %s", i, cmd, got, want)
		}
	}
}

// TestMultiWithClients: what rate-limiter-flexible's non-Lua mode sends,
// through go-redis's transaction API, in both protocols.
func TestMultiWithClients(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		c := ts.client(t, proto)
		key := fmt.Sprint("rlflx:", proto)
		for i := int64(1); i <= 3; i++ {
			var incr *redis.IntCmd
			var pttl *redis.DurationCmd
			var thr *redis.Cmd
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.SetNX(ctx, key, 0, 10*time.Second)
				incr = p.IncrBy(ctx, key, 1)
				pttl = p.PTTL(ctx, key)
				thr = p.Do(ctx, "CL.THROTTLE", key+":cell", 1, 1, 60)
				return nil
			})
			require.NoError(t, err)
			if incr.Val() != i || pttl.Val() != 10*time.Second {
				t.Errorf("resp%d hit %d: INCRBY %d, PTTL %v", proto, i, incr.Val(), pttl.Val())
			}
			if got := ints(t, thr); got[0] != map[bool]int64{true: 1, false: 0}[i == 3] {
				t.Errorf("resp%d hit %d: CL.THROTTLE in MULTI = %v", proto, i, got)
			}
		}
	}
}

// TestExecIsAtomic: while transactions move a unit from one key to
// another, no reader ever sees the sum other than constant.
func TestExecIsAtomic(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	setup := ts.client(t, 2)
	setup.MSet(ctx, "from", 1000, "to", 0)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 3; w++ {
		c := ts.client(t, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Decr(ctx, "from")
					p.Incr(ctx, "to")
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	reader := ts.client(t, 2)
	bad := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			v := reader.MGet(ctx, "from", "to").Val()
			var a, b int
			fmt.Sscan(v[0].(string), &a)
			fmt.Sscan(v[1].(string), &b)
			if a+b != 1000 {
				bad++
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	if bad > 0 {
		t.Errorf("MGET saw a half-applied transaction %d times", bad)
	}
	if v := setup.MGet(ctx, "from", "to").Val(); v[0] != "700" || v[1] != "300" {
		t.Errorf("after 300 transfers: %v", v)
	}
}

func TestMultiRefusesNoMultiAndKeylessCommandsWork(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2).Conn()
	t.Cleanup(func() { c.Close() })
	c.Do(ctx, "SET", "x", 1)
	c.Do(ctx, "MULTI")
	if err := c.Do(ctx, "SHUTDOWN").Err(); err == nil || err.Error() != "ERR Command not allowed inside a transaction" {
		t.Errorf("SHUTDOWN in MULTI: %v", err)
	}
	if err := c.Do(ctx, "EXEC").Err(); err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
		t.Errorf("EXEC after a refused command: %v", err)
	}
	// Keyless commands that read the whole keyspace run with every shard held.
	c.Do(ctx, "MULTI")
	c.Do(ctx, "DBSIZE")
	c.Do(ctx, "KEYS", "*")
	c.Do(ctx, "INCR", "x")
	c.Do(ctx, "FLUSHALL")
	c.Do(ctx, "DBSIZE")
	v, err := c.Do(ctx, "EXEC").Result()
	require.NoError(t, err)
	if got := fmt.Sprint(v); got != "[1 [x] 2 OK 0]" {
		t.Errorf("EXEC = %s", got)
	}
}

// TestWatchOptimisticLocking: go-redis's Watch retries a read-modify-write
// when another client changed the key between WATCH and EXEC.
func TestWatchOptimisticLocking(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	other := ts.client(t, 3)
	c.Set(ctx, "n", 10, 0)
	attempts := 0
	txf := func(tx *redis.Tx) error {
		attempts++
		n, err := tx.Get(ctx, "n").Int()
		if err != nil {
			return err
		}
		if attempts == 1 {
			other.IncrBy(ctx, "n", 100) // a concurrent writer
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "n", n*2, 0)
			return nil
		})
		return err
	}
	for i := 0; i < 3; i++ {
		if err := c.Watch(ctx, txf, "n"); err == nil {
			break
		} else if err != redis.TxFailedErr {
			t.Fatal(err)
		}
	}
	if attempts != 2 {
		t.Errorf("%d attempts, want 2 (the first must fail)", attempts)
	}
	if got := c.Get(ctx, "n").Val(); got != "220" {
		t.Errorf("n = %s, want (10+100)*2", got)
	}
}

// TestSnapshotInsideMulti: BGSAVE queued in a transaction runs with every
// shard held; its writer must wait for EXEC, not deadlock it. (SAVE is
// no_multi, as in Redis.)
func TestSnapshotInsideMulti(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	c.Set(ctx, "a", 1, 0)
	done := make(chan error, 1)
	go func() {
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, "a")
			p.BgSave(ctx)
			p.DBSize(ctx)
			return nil
		})
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("EXEC with BGSAVE never answered")
	}
	if v := c.Get(ctx, "a").Val(); v != "2" {
		t.Errorf("a = %s", v)
	}
	for i := 0; i < 200; i++ {
		if v, _ := infoField(c.Info(ctx, "persistence").Val(), "rdb_bgsave_in_progress"); v == "0" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v, _ := infoField(c.Info(ctx, "persistence").Val(), "rdb_last_bgsave_status"); v != "ok" {
		t.Errorf("the BGSAVE started inside EXEC: status %q", v)
	}
}

// CLIENT LIST shows a client inside MULTI as Redis does, flag x and the
// number of commands queued, and outside it flag N and multi=-1.
func TestClientListShowsMulti(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	tx := c.Conn()
	defer tx.Close()
	require.NoError(t, tx.Do(ctx, "CLIENT", "SETNAME", "tx").Err())
	shows := func(when string, want ...string) {
		t.Helper()
		for _, line := range strings.Split(c.ClientList(ctx).Val(), "\n") {
			if !strings.Contains(line, " name=tx ") {
				continue
			}
			for _, w := range want {
				if !strings.Contains(line, " "+w+" ") {
					t.Errorf("%s: CLIENT LIST line lacks %q: %s", when, w, line)
				}
			}
			return
		}
		t.Fatalf("%s: no line for the client named tx", when)
	}
	do := func(args ...any) {
		t.Helper()
		if err := tx.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	shows("before MULTI", "flags=N", "multi=-1")
	do("MULTI")
	shows("after MULTI", "flags=x", "multi=0")
	do("INCR", "n")
	do("INCR", "n")
	shows("two commands queued", "flags=x", "multi=2")
	do("EXEC")
	shows("after EXEC", "flags=N", "multi=-1")
	do("MULTI")
	do("INCR", "n")
	do("DISCARD")
	shows("after DISCARD", "flags=N", "multi=-1")
}
