// Package keyspace is the family of keyspace and data-type commands: the
// generic key commands (DEL, EXISTS, TYPE, RENAME, SCAN, KEYS, FLUSHALL,
// MEMORY USAGE, OBJECT ENCODING), expiry (EXPIRE, TTL, PERSIST and their
// forms), strings and counters, hashes, lists, sets and sorted sets, with
// Redis 7's replies and error texts. The limiter libraries' Lua scripts
// and the proxies that build limits out of INCR and EXPIRE use them. Its
// commands read and write the keyspace through the client they run for
// (Client.Engine), so that inside EXEC and a script's redis.call they
// reach the transaction's shards; its one state is the clients blocked in
// a blocking pop (blocking_pops.go).
//
// It imports the command core and the engine; never another family, the
// transport or the assembly.
package keyspace

import "github.com/limitdb/limitdb/command"

// Family is the keyspace and data-type commands.
type Family struct{}

// New returns the family.
func New() *Family { return &Family{} }

// Register adds the family's commands to t.
func (*Family) Register(t *command.Table, env command.Env) {
	registerKeys(t)
	registerCopy(t)
	registerExpire(t)
	registerObject(t)
	registerStrings(t)
	registerStringBits(t, env)
	registerHash(t)
	registerList(t)
	registerListMoves(t)
	registerBlockingPops(t, env)
	registerSet(t)
	registerSetOps(t)
	registerZSet(t)
	registerScan(t)
	registerZSetOps(t)
}

// countTrue calls f on each item and counts the trues: how many members
// SADD added, HDEL deleted, ZREM removed.
func countTrue(items [][]byte, f func([]byte) bool) int64 {
	n := int64(0)
	for _, it := range items {
		if f(it) {
			n++
		}
	}
	return n
}
