package command

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/limitdb/limitdb/engine"
)

// The replication family, as far as a primary without replicas goes: what
// Sentinel and clients read of a node's role (ROLE, INFO replication,
// run_id). A server is a primary; replicas, SLAVEOF and the replication
// stream come with the replication package.

func registerReplication(t *Table) {
	t.register(&Command{Name: "role", Arity: 1, Flags: FlagAdmin | FlagFast | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
		Complexity: "O(1)", Summary: "Returns the node's role in replication: master, with its replication offset and replicas.",
		Handler: cmdRole})
	t.registerInfo("replication", 70, infoReplication)
}

// newRunID is a node's identity for this run, 40 hex digits, as Redis's
// run_id and master_replid: Sentinel tells a restarted node from the one
// it knew by it.
func newRunID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// cmdRole answers ROLE as a primary with no replica does: master, offset 0,
// no replicas.
func cmdRole(c *Client, _ [][]byte) {
	c.Array(3)
	c.BulkString("master")
	c.Int(0)
	c.Array(0)
}

func infoReplication(s *Server, _ *engine.Engine, b *strings.Builder) {
	infoLine(b, "role", "master")
	infoLine(b, "connected_slaves", 0)
	infoLine(b, "master_failover_state", "no-failover")
	infoLine(b, "master_replid", s.replID)
	infoLine(b, "master_replid2", strings.Repeat("0", 40))
	infoLine(b, "master_repl_offset", 0)
	infoLine(b, "second_repl_offset", -1)
	infoLine(b, "repl_backlog_active", 0)
	infoLine(b, "repl_backlog_size", 1<<20)
	infoLine(b, "repl_backlog_first_byte_offset", 0)
	infoLine(b, "repl_backlog_histlen", 0)
}
