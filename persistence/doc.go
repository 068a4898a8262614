// Package persistence writes and loads limitdb snapshots (every live key of
// the keyspace, in engine's one serialised entry form, plus named sections
// that other features register: named policies, ...), the change stream's
// records, the append-only file made of both, and DUMP's one-key payload.
//
// persistence may import engine; it must never import resp (the protocol).
//
// # File format, version 1
//
// All integers are little-endian unless marked varint (Go's encoding/binary
// Uvarint/Varint).
//
//	header   "LIMITDB\x00"                 8 bytes, magic
//	         version          uint32       1
//	         created          int64        Unix ns at which the save started
//	records  zero or more of:
//	         'K' uvarint(len(key)) key uvarint(len(entry)) entry
//	             entry is engine.Entry.AppendBinary: kind byte, varint
//	             Expire, varint A, varint B, uvarint(len(ext)) ext
//	         'S' uvarint(len(name)) name uvarint(len(data)) data
//	             a named section (see Sections)
//	trailer  'E' uvarint(keys) uvarint(sections)
//	         crc              uint32       CRC-32C (Castagnoli) of every byte
//	                                       before it, header included
//
// Nothing may follow the checksum. The loader reads the whole file, checks
// the magic, the version, the trailer counts and the checksum before it
// decodes a single entry, so a corrupt or truncated file changes nothing and
// yields an error prefixed "snapshot: " that names the problem.
//
// State is absolute wall-clock time (Unix ns), so an entry restored an hour
// later is exactly what it would have been had the server never stopped;
// entries whose Expire has passed at load time are skipped and counted.
//
// # Writing
//
// Save writes to "<file>.tmp" in the same directory, fsyncs it, renames it
// over the file and fsyncs the directory: a crash at any moment leaves either
// the previous snapshot or the new one, never a mix. A leftover .tmp file from
// a crash is simply overwritten by the next save.
//
// # Consistency
//
// A snapshot is not a fork-style instant. Save walks the shards one at a
// time and copies each shard's live entries under that shard's lock (about
// 4k keys a shard at 1M keys: a few hundred microseconds), then encodes and
// writes them with no lock held, yielding between shards, so a client is
// never stalled for longer than one shard copy. Entries with Ext state are
// encoded under the lock, since an algorithm may change Ext in place.
// SaveStats.MaxShardHold and MeanShardHold (INFO persistence:
// rdb_last_save_max_shard_hold_us, rdb_last_save_mean_shard_hold_us)
// report the holds of the last save. Each key is
// consistent (never a half-applied command) and atomic multi-key updates
// within one shard stay together, but keys of different shards are taken at
// slightly different moments over the save's short interval.
//
// # Sections
//
// Features whose state is not keys add a named section to the Sections a
// server passes to Save and Load:
//
//	sections.Add("policies", savePolicies, loadPolicies)
//
// save is called once per snapshot, after the keys are written, and returns
// the section's bytes (its own format: version it inside if it may change).
// load is called at start-up with those bytes, after the whole file has been
// verified and before the server accepts connections. A section found in a
// file but not registered is skipped and reported in LoadStats; a section
// that is registered but absent from the file has load left uncalled.
//
// Sections whose state says where the keys start from add themselves with
// AddEarly instead: their save runs when the snapshot begins, before the
// first key is copied (the "replication" section: the replication ID and
// offset the keys hold at least, replication/doc.go).
//
// # Change-stream records, version 2
//
// The change stream (replication/doc.go) and the append-only file's incr
// files are runs of records, each either compact (below) or a RESP array
// of bulk strings:
//
//	APPLY key entry [key entry ...]   set each key to entry (engine's
//	                                  serialised form), as one unit; an
//	                                  empty entry deletes the key
//	RESET [key entry ...]             delete every key, then APPLY
//	DROP key [key ...]                delete each key, each a unit of its
//	                                  own (active expiry's deletions)
//	SECTION name data                 a snapshot section's new state
//	                                  (named policies)
//	PING                              the primary is alive
//	REPLCONF GETACK *                 answer REPLCONF ACK now (WAIT)
//
// A unit's APPLY and active expiry's DROP are written compact, a third
// of their RESP size (compact.go): a tag byte that no RESP array starts
// with, uvarint(len(body)), and the body:
//
//	0xA1 body  (uvarint(len(key)) key compact-entry)+     APPLY
//	0xD1 body  (uvarint(len(key)) key)+                   DROP
//
//	compact-entry  head   kind | 0x20 Expire = A | 0x40 B = 0 | 0x80 no ext
//	                      (0x00 alone: delete the key)
//	               varint A
//	               varint (Expire - A)      unless 0x20
//	               varint B                 unless 0x40
//	               uvarint(len(ext)) ext    unless 0x80; len(ext) > 0
//
// which is engine's serialised entry with what a limiter's state repeats
// left out: CL.THROTTLE's state on a 14-byte key is a 27-byte record
// (RESP: 64). A unit that empties the keyspace (RESET) or holds a kind
// above 31 is written as RESP. Version 1 wrote every record as RESP;
// version 2 reads both, so a replica or a file of version 1 loads, but a
// version 1 node reads neither a version 2 stream nor its append-only
// file (upgrade replicas before their primary, as with Redis).
//
// record.go and compact.go hold the codec: AppendUnit, AppendDrop and
// AppendCommand write records; ReadRecord and ParseRecord read either
// form, refusing anything else with ErrBadRecord (a body's length past
// 512 MB, a key or an entry past its body, a deletion with flags, an ext
// of length 0); an Applier applies them to a keyspace, decoding a compact
// entry through DecodeEntry as any other.
//
// # Append-only file
//
// The layout is Redis 7's multi-part AOF: a directory (appenddirname) with
//
//	<name>.manifest          one line per file, oldest first:
//	                         "file <file> seq <n> type b|i"
//	<name>.<seq>.base.ldb    at most one: a snapshot in the format above
//	<name>.<seq>.incr.aof    change-stream records (above),
//	                         RESP arrays of bulk strings, appended in order
//
// where <name> is appendfilename. The state is the base file, then every
// incr file's records applied in manifest order. Each record sets the final
// state of the keys one atomic unit changed (APPLY key entry ...), empties
// the keyspace first (RESET ...), deletes the keys a step of active expiry
// deleted (DROP key ...), or replaces a section (SECTION name data);
// records are idempotent, so a base that already reflects some records
// that follow it loads to the same state.
//
// A rewrite (BGREWRITEAOF) first rotates: a new incr file is listed in the
// manifest and takes every record from then on. It then writes a new base
// (a snapshot, taken after the rotation) through a temporary file, fsyncs
// it, and switches the manifest to the new base plus the incr files from
// the rotation on; the replaced files are deleted afterwards. The manifest
// is always replaced through a fsynced temporary file and a rename, so a
// crash at any moment leaves a manifest whose files are all present.
//
// Loading stops at the first record that does not parse or that the
// server refuses, naming the file and the record's byte offset. The one
// exception is a record that the last incr file ends inside of (a crash in
// the middle of a write): with aof-load-truncated yes the file is cut back
// to its last whole record and loading goes on; with no it is refused too.
//
// # DUMP payload, version 1
//
// DUMP answers, and RESTORE and MIGRATE take, one key's value in limitdb's
// own form, laid out as Redis lays out its own (value, version, checksum)
// but not Redis's RDB encoding: a payload from redis-server is refused
// here, and one from limitdb by redis-server.
//
//	entry    engine.Entry.AppendBinary: kind byte, varint Expire (always
//	         0 here), varint A, varint B, uvarint(len(ext)) ext
//	version  uint16 little-endian   1
//	crc      uint64 little-endian   CRC-64/ECMA (hash/crc64.ECMA) of the
//	                                entry and the version
//
// The entry carries no expiry: RESTORE's ttl argument sets it, as in Redis.
// A limiter's state is absolute wall-clock time (integer Unix ns), so a
// limiter restored on another node with the PTTL it had answers exactly as
// it would have on its source, given clocks in step.
//
// Redis's payloads carry an RDB version (6 to 12) and a CRC-64/Jones, so one
// fails this version check; ours fails Redis's checksum. A payload is
// decoded only after its length, version and checksum are verified, and
// only when its entry uses every byte before the version.
package persistence
