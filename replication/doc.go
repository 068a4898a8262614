// Package replication copies a limitdb keyspace to replicas, as Redis
// replication does, and feeds the append-only file: one change stream,
// read by every replica and by the file.
//
// # The change stream
//
// A primary's engine tells its Journal (the Stream) the final state of the
// keys each atomic unit changed, and the keys each step of active expiry
// deleted (engine.Journal). The Stream encodes each unit, and each step,
// as one record, a RESP array, so that the replication link reads like
// Redis's, and appends it to a buffer whose byte count is the replication
// offset. The records' codec, writer and reader both, is persistence's
// (persistence/doc.go, "Change-stream records"), since the append-only
// file holds the same records.
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
// # The append-only file
//
// AOF (aof.go) is the stream's other reader: it loads the file at
// start-up, appends what the stream holds before each round's replies go
// out, fsyncs on appendfsync's schedule on the clock it is given, and
// rewrites the file (a new base, a snapshot) on BGREWRITEAOF, when it
// starts without a file, and when a replica's full copy starts the
// stream over. The file's layout is persistence's.
package replication
