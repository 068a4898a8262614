package client

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Pipeliner is what batching needs of go-redis besides Do: *redis.Client,
// *redis.ClusterClient, *redis.Ring and redis.UniversalClient all have it.
type Pipeliner interface {
	Pipeline() redis.Pipeliner
}

// batcher coalesces the commands of concurrent calls into pipelines: a
// call that finds fewer than max pipelines in flight sends every command
// queued so far, its own included, in one pipeline; calls that arrive
// meanwhile queue, and the next pipeline takes them all. An idle client
// therefore sends a lone call at once, and a busy one sends one round trip
// per batch instead of one per call.
type batcher struct {
	p   Pipeliner
	max int

	mu       sync.Mutex
	queue    []*call
	inFlight int

	pipelines, commands atomic.Int64
}

// call is one queued command and, once done is closed, its reply.
type call struct {
	ctx  context.Context
	args []any
	cmd  *redis.Cmd
	done chan struct{}
}

// do sends args in the next pipeline and waits for its reply, or for ctx.
// A call whose ctx ends first returns ctx's error; its command may still
// be sent and charged, as a timed-out go-redis call may.
func (b *batcher) do(ctx context.Context, args []any) *redis.Cmd {
	c := &call{ctx: ctx, args: args, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := b.inFlight < b.max
	var batch []*call
	if lead {
		b.inFlight++
		batch, b.queue = b.queue, nil
	}
	b.mu.Unlock()
	if lead {
		go b.send(batch) // so that this caller, too, can stop waiting at its deadline
	}
	select {
	case <-c.done:
		return c.cmd
	case <-ctx.Done():
		cmd := redis.NewCmd(ctx, args...)
		cmd.SetErr(ctx.Err())
		return cmd
	}
}

// send runs batch as one pipeline, then each queue that built up
// meanwhile, until none did.
func (b *batcher) send(batch []*call) {
	for len(batch) > 0 {
		b.run(batch)
		b.mu.Lock()
		batch, b.queue = b.queue, nil
		if len(batch) == 0 {
			b.inFlight--
		}
		b.mu.Unlock()
	}
}

// run sends batch as one pipeline and hands each call its reply.
func (b *batcher) run(batch []*call) {
	// The pipeline outlives any one caller: it runs on the first caller's
	// values without its cancellation, bounded by the go-redis client's
	// read and write timeouts; each caller still stops waiting at its own
	// deadline.
	ctx := context.WithoutCancel(batch[0].ctx)
	pipe := b.p.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		cmds[i] = pipe.Do(ctx, c.args...)
	}
	pipe.Exec(ctx) // each command carries its own error
	b.pipelines.Add(1)
	b.commands.Add(int64(len(batch)))
	for i, c := range batch {
		c.cmd = cmds[i]
		close(c.done)
	}
}
