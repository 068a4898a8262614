package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// aofIncr is the path of the first incremental file of dir's append-only
// file, with the default names.
func aofIncr(dir string, seq int) string {
	return filepath.Join(dir, "appendonlydir", fmt.Sprintf("appendonly.aof.%d.incr.aof", seq))
}

// waitRewrite waits until no AOF rewrite runs and returns the last status.
func waitRewrite(t *testing.T, c *redis.Client) string {
	t.Helper()
	require.Eventually(t, func() bool { return infoOf(t, c, "persistence", "aof_rewrite_in_progress") == "0" },
		20*time.Second, 10*time.Millisecond)
	return infoOf(t, c, "persistence", "aof_last_bgrewrite_status")
}

// TestAOFAlwaysLosesNothingOnKill9: with appendfsync always, every write a
// client saw acknowledged is there after kill -9, from several writers at
// once; the writes are limiter calls, counters and a multi-key set.
func TestAOFAlwaysLosesNothingOnKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0", "--appendonly", "yes", "--appendfsync", "always")
	c := p.client(t)
	require.Equal(t, "1", infoOf(t, c, "persistence", "aof_enabled"))
	waitRewrite(t, c) // the first base

	const writers = 4
	acked := make([]int64, writers) // the last INCR reply each writer saw
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			wc := p.client(t)
			for {
				select {
				case <-stop:
					return
				default:
				}
				n, err := wc.Incr(ctx, fmt.Sprint("n", w)).Result()
				if err != nil {
					return
				}
				if err := wc.Do(ctx, "CL.THROTTLE", fmt.Sprint("cl", w), 100000, 1, 3600).Err(); err != nil {
					return
				}
				acked[w] = n
			}
		}(w)
	}
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, c.MSet(ctx, "m1", "a", "m2", "b").Err())
	time.Sleep(300 * time.Millisecond)
	p.kill9(t)
	close(stop)
	wg.Wait()

	p = mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	c = p.client(t)
	for w := 0; w < writers; w++ {
		got, err := c.Get(ctx, fmt.Sprint("n", w)).Int64()
		require.NoError(t, err)
		// The write in flight at the kill may or may not have reached the file.
		if got < acked[w] || got > acked[w]+1 {
			t.Errorf("writer %d: n = %d after kill -9, acknowledged %d", w, got, acked[w])
		}
		if acked[w] < 10 {
			t.Errorf("writer %d made only %d writes: the test proves little", w, acked[w])
		}
		// Each acknowledged INCR was followed by an acknowledged CL.THROTTLE
		// of 1: the limit's remaining count says how many reached the file.
		rem := ints(t, c.Do(ctx, "CL.THROTTLE", fmt.Sprint("cl", w), 100000, 1, 3600, 0))[2]
		if used := 100001 - rem; used < acked[w]-1 || used > acked[w]+1 {
			t.Errorf("writer %d: the limit holds %d takes, acknowledged %d", w, used, acked[w])
		}
	}
	require.Equal(t, []any{"a", "b"}, c.MGet(ctx, "m1", "m2").Val())
	t.Logf("writes per writer before the kill: %v", acked)
}

// TestAOFTornRecordAtTheEnd: a record cut short at the end of the last
// file (a crash mid-write) is cut off and the server starts with
// aof-load-truncated yes (the default), and refuses to with no.
func TestAOFTornRecordAtTheEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	c := p.client(t)
	waitRewrite(t, c)
	for i := 0; i < 100; i++ {
		require.NoError(t, c.Incr(ctx, "n").Err())
	}
	require.Eventually(t, func() bool { return infoOf(t, c, "persistence", "aof_buffer_length") == "0" }, 5*time.Second, 5*time.Millisecond)
	p.kill9(t)
	incr := aofIncr(dir, 2) // 1 was replaced by the first rewrite
	whole, err := os.ReadFile(incr)
	require.NoError(t, err)
	f, err := os.OpenFile(incr, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	f.WriteString("*3\r\n$5\r\nAPPLY\r\n$1\r\nn\r\n$10\r\nabc") // torn
	f.Close()

	_, err = startProc(t, dir, "--save", "0", "--appendonly", "yes", "--aof-load-truncated", "no")
	require.Error(t, err)
	require.Contains(t, err.Error(), fmt.Sprintf("appendonly.aof.2.incr.aof ends inside the record at offset %d", len(whole)))

	p = mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	c = p.client(t)
	require.Equal(t, "100", c.Get(ctx, "n").Val())
	require.Contains(t, p.log.String(), "bytes cut off")
	fi, err := os.Stat(incr)
	require.NoError(t, err)
	require.Equal(t, int64(len(whole)), fi.Size(), "the torn record was not cut off the file")
	require.NoError(t, c.Incr(ctx, "n").Err()) // and the file goes on from there
	p.kill9(t)
	p = mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	require.Equal(t, "101", p.client(t).Get(ctx, "n").Val())
}

// TestAOFCorruptRecordRefused: damage in the middle of a file stops
// start-up whatever aof-load-truncated says, naming the file and offset,
// and leaves the file as it was.
func TestAOFCorruptRecordRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	c := p.client(t)
	waitRewrite(t, c)
	require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
	require.Eventually(t, func() bool { return infoOf(t, c, "persistence", "aof_buffer_length") == "0" }, 5*time.Second, 5*time.Millisecond)
	first, err := os.ReadFile(aofIncr(dir, 2))
	require.NoError(t, err)
	require.NoError(t, c.Set(ctx, "b", "2", 0).Err())
	require.NoError(t, c.Set(ctx, "c", "3", 0).Err())
	require.Eventually(t, func() bool { return infoOf(t, c, "persistence", "aof_buffer_length") == "0" }, 5*time.Second, 5*time.Millisecond)
	p.kill9(t)
	data, err := os.ReadFile(aofIncr(dir, 2))
	require.NoError(t, err)
	data[len(first)] = '?' // the second record's array header
	require.NoError(t, os.WriteFile(aofIncr(dir, 2), data, 0o644))

	_, err = startProc(t, dir, "--save", "0", "--appendonly", "yes")
	require.Error(t, err)
	require.Contains(t, err.Error(), fmt.Sprintf("appendonly.aof.2.incr.aof: bad record at offset %d", len(first)))
	after, _ := os.ReadFile(aofIncr(dir, 2))
	require.Equal(t, data, after, "a refused file was changed")
}

// TestBGRewriteAOF: a rewrite under a steady load leaves a base and a new
// incremental file that restore exactly the state, serving all along.
func TestBGRewriteAOF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	c := p.client(t)
	// the first base is written in the background after start-up: until it
	// has begun, no rewrite is in progress and none is done
	require.Eventually(t, func() bool { return infoOf(t, c, "persistence", "aof_rewrites") == "1" }, 20*time.Second, 10*time.Millisecond)
	require.Equal(t, "ok", waitRewrite(t, c))
	fillKeys(t, c, "k", 20000)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if c.Incr(ctx, "during").Err() == nil {
				writes++
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	s, err := c.Do(ctx, "BGREWRITEAOF").Text()
	require.NoError(t, err)
	require.Equal(t, "Background append only file rewriting started", s)
	require.Equal(t, "ok", waitRewrite(t, c))
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	require.Equal(t, "2", infoOf(t, c, "persistence", "aof_rewrites"))
	base, _ := strconv.ParseInt(infoOf(t, c, "persistence", "aof_base_size"), 10, 64)
	cur, _ := strconv.ParseInt(infoOf(t, c, "persistence", "aof_current_size"), 10, 64)
	require.True(t, base > 100000 && cur > base, "aof_base_size %d, aof_current_size %d", base, cur)
	m, err := os.ReadFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest"))
	require.NoError(t, err)
	require.Equal(t, "file appendonly.aof.2.base.ldb seq 2 type b\nfile appendonly.aof.3.incr.aof seq 3 type i\n", string(m))
	entries, _ := os.ReadDir(filepath.Join(dir, "appendonlydir"))
	require.Len(t, entries, 3, "replaced files were left behind")
	want := c.Get(ctx, "during").Val()
	remaining := throttle(t, c, "k777", 0)
	require.Equal(t, fmt.Sprint(writes), want)
	c.Do(ctx, "SHUTDOWN", "NOSAVE") // the reply is the connection closing
	p.wait(t)

	p = mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	c = p.client(t)
	require.Equal(t, int64(20001), dbsize(t, c))
	require.Equal(t, want, c.Get(ctx, "during").Val())
	require.Equal(t, remaining, throttle(t, c, "k777", 0))
}

// TestAppendOnlyAtRunTime: CONFIG SET appendonly yes writes a base of the
// keyspace as it is and logs from then on; a restart with appendonly yes
// loads it (not the snapshot); CONFIG SET appendonly no stops it.
func TestAppendOnlyAtRunTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0")
	c := p.client(t)
	require.Equal(t, "0", infoOf(t, c, "persistence", "aof_enabled"))
	fillKeys(t, c, "k", 1000)
	require.NoError(t, c.ConfigSet(ctx, "appendonly", "yes").Err())
	require.Equal(t, "1", infoOf(t, c, "persistence", "aof_enabled"))
	require.Equal(t, "ok", waitRewrite(t, c))
	require.NoError(t, c.Set(ctx, "after", "x", 0).Err())
	require.NoError(t, c.ConfigSet(ctx, "appendfsync", "always").Err())
	require.NoError(t, c.Set(ctx, "always", "y", 0).Err())
	require.NoError(t, c.ConfigSet(ctx, "appendonly", "no").Err())
	require.Equal(t, "0", infoOf(t, c, "persistence", "aof_enabled"))
	require.NoError(t, c.Set(ctx, "not-logged", "z", 0).Err())
	p.kill9(t)

	p = mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	c = p.client(t)
	require.Equal(t, int64(1002), dbsize(t, c))
	require.Equal(t, "y", c.Get(ctx, "always").Val())
	require.True(t, strings.Contains(p.log.String(), "append-only file loaded"), p.log.String())
}

// TestAOFFullDisk: when the file cannot be written, writes answer
// MISCONF as Redis's do, reads and peeks go on, and CONFIG SET appendonly
// no lifts the refusal. The next incremental file is /dev/full.
func TestAOFFullDisk(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	c := p.client(t)
	require.Equal(t, "ok", waitRewrite(t, c))
	require.NoError(t, c.Set(ctx, "before", "1", 0).Err())
	require.NoError(t, os.Symlink("/dev/full", aofIncr(dir, 3)))
	require.NoError(t, c.Do(ctx, "BGREWRITEAOF").Err())
	require.Equal(t, "ok", waitRewrite(t, c))
	var err error
	require.Eventually(t, func() bool {
		err = c.Set(ctx, "k", "v", 0).Err()
		return err != nil
	}, 5*time.Second, 10*time.Millisecond)
	require.True(t, strings.HasPrefix(err.Error(), "MISCONF Errors writing to the AOF file: "), err.Error())
	require.Contains(t, err.Error(), "no space left on device")
	require.Equal(t, "err", infoOf(t, c, "persistence", "aof_last_write_status"))
	require.Equal(t, "1", c.Get(ctx, "before").Val())
	require.NoError(t, c.Do(ctx, "CL.THROTTLE", "peek", 5, 10, 60, 0).Err())
	require.NoError(t, c.ConfigSet(ctx, "appendonly", "no").Err())
	require.NoError(t, c.Set(ctx, "after", "v", 0).Err())
}

// TestReplicaAppendOnly: a replica with appendonly yes logs what it
// applies; its full copy from the primary becomes a new base. After kill
// -9 it restarts, alone, with the primary's keyspace.
func TestReplicaAppendOnly(t *testing.T) {
	t.Parallel()
	prim := mustStart(t, t.TempDir(), "--save", "0")
	pc := prim.client(t)
	fillKeys(t, pc, "a", 5000)
	dir := t.TempDir()
	host, port, _ := strings.Cut(prim.addr, ":")
	rep := mustStart(t, dir, "--save", "0", "--appendonly", "yes", "--replicaof", host+" "+port)
	rc := rep.client(t)
	require.Eventually(t, func() bool { return infoOf(t, rc, "replication", "master_link_status") == "up" }, 10*time.Second, 10*time.Millisecond)
	fillKeys(t, pc, "b", 5000)
	require.NoError(t, pc.Incr(ctx, "n").Err())
	require.Equal(t, int64(1), pc.Do(ctx, "WAIT", 1, 5000).Val())
	require.Equal(t, "ok", waitRewrite(t, rc))
	require.Eventually(t, func() bool { return infoOf(t, rc, "persistence", "aof_buffer_length") == "0" }, 5*time.Second, 5*time.Millisecond)
	want := throttle(t, pc, "b4999", 0)
	rep.kill9(t)

	rep = mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	rc = rep.client(t)
	require.Equal(t, int64(10001), dbsize(t, rc))
	require.Equal(t, "1", rc.Get(ctx, "n").Val())
	require.Equal(t, want, throttle(t, rc, "b4999", 0))
}
