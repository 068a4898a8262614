// Package replication copies a limitdb keyspace to replicas, as Redis
// replication does, and feeds the append-only file: one change stream,
// read by every replica and by the file.
//
// # The change stream
//
// A primary's engine tells its Journal (the Stream) the final state of the
// keys each atomic unit changed, and the keys each step of active expiry
// deleted (engine.Journal). The Stream encodes each unit, and each step,
// as one record, compact (a tag byte, a length, the keys and their
// entries: 27 bytes for a CL.THROTTLE on a 14-byte key, where Redis's
// INCR on it takes 35), and appends it to a buffer whose byte count is
// the replication offset; PING, REPLCONF GETACK, SECTION and RESET are
// RESP arrays, as on Redis's link. The records' codec, writer and reader
// both, is persistence's (persistence/doc.go, "Change-stream records,
// version 2"), since the append-only file holds the same records.
//
// Records are effects, never commands: a limiter's state holds the instant
// it ran at, so a replica reaches the primary's exact entry whatever its
// own clock says, and applying a record twice changes nothing. That is
// what lets a full resynchronisation use limitdb's snapshot, which copies
// one shard at a time rather than at one instant: the replica loads the
// snapshot, then applies the stream from the offset taken before the
// snapshot began; records the snapshot already holds are applied again,
// harmlessly.
//
// # Offsets, backlog and resynchronisation
//
// Offsets and IDs are Redis's: master_repl_offset counts the stream's
// bytes, the replication ID names its history, and a replica asks
// "PSYNC id offset+1". The primary keeps the last repl-backlog-size bytes;
// a replica whose next byte is still there continues (+CONTINUE), any
// other gets "+FULLRESYNC id offset" followed by a snapshot as a bulk
// string, then the stream from that offset. A replica keeps the stream it
// applied in its own backlog, at the primary's offsets, so that when it is
// promoted (REPLICAOF NO ONE) it takes a new ID, keeps the old one as
// replid2, and the other replicas continue from it without a full copy.
//
// # Reconnecting
//
// A replica whose link applied the stream reconnects at once when the
// link fails, as Redis 7 does, and asks to continue; an attempt that fails
// before the stream flows waits 50 ms, then twice as long each time up to
// a second, on the clock it is given. The backlog (repl-backlog-size,
// default 32 MB) must hold what a replica may not have applied when its
// link fails: up to the 4 MB its connection is given ahead plus the
// kernel's socket buffers, and the stream written while it reconnects.
//
// # Resuming after a restart
//
// A snapshot keeps the replication ID and offset its keys hold at least
// (the "replication" section, taken when the save begins: records applied
// while it is written are applied again on resumption, harmlessly), as
// Redis keeps repl-id and repl-offset in an RDB file: only when the
// keyspace is that history (not during a full resynchronisation) and the
// stream is kept (a replica, a primary with a backlog). Loaded from the
// snapshot file at start-up (not from the append-only file, as Redis 7.0),
// they make a node started as a replica ask "PSYNC id offset+1", and a
// node started as a primary take a new ID with the saved one as replid2
// up to offset+1, so that its replicas continue. A replica with no such
// history asks "PSYNC ? -1", which the primary does not count in
// sync_partial_err; REPLICAOF at run time asks to continue the node's own
// history, which it counts when it fails, as Redis does.
//
//	section "replication"   version byte 1, uvarint(len(id)) id (40 hex
//	                        digits), uvarint offset; empty: no history
//
// # The append-only file
//
// AOF (aof.go) is the stream's other reader: it loads the file at
// start-up, appends what the stream holds before each round's replies go
// out, fsyncs on appendfsync's schedule on the clock it is given, and
// rewrites the file (a new base, a snapshot) on BGREWRITEAOF, when it
// starts without a file, and when a replica's full copy starts the
// stream over. The file's layout is persistence's.
package replication
