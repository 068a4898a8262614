package clustering_test

import (
	"encoding/binary"
	"hash/crc64"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/persistence"
)

// FuzzRestore: whatever entry a RESTORE payload carries (the fuzzer's
// bytes, under a version and checksum that match them), RESTORE refuses
// it or makes a key that every command of its type, DUMP and a second
// RESTORE of that dump serve without an internal error.
func FuzzRestore(f *testing.F) {
	f.Add([]byte{7, 0, 0, 0, 1, 'v'})               // a string
	f.Add([]byte{8, 0, 0, 0, 5, 1, 1, 'f', 1, 'v'}) // a hash
	f.Add([]byte{9, 0, 0, 0, 3, 1, 1, 'm'})         // a set
	f.Add([]byte{11, 0, 0, 0, 3, 1, 1, 'e'})        // a list
	f.Add([]byte{8, 0, 0, 0, 0})                    // a hash with no contents
	f.Add([]byte{10, 0, 0, 0, 1, 0})                // a sorted set of no members
	f.Add([]byte{1, 0, 2, 0, 0})                    // a GCRA state
	f.Add([]byte{6, 0, 0, 0, 3, 1, 2, 3})           // a sliding log
	c, _ := newLocal(f)
	reads := [][]any{
		{"TYPE", "k"}, {"GET", "k"}, {"STRLEN", "k"}, {"HGETALL", "k"}, {"HLEN", "k"}, {"SMEMBERS", "k"}, {"SCARD", "k"},
		{"ZRANGE", "k", "0", "-1", "WITHSCORES"}, {"ZCARD", "k"}, {"LRANGE", "k", "0", "-1"}, {"LLEN", "k"},
		{"MEMORY", "USAGE", "k"}, {"OBJECT", "ENCODING", "k"}, {"PTTL", "k"},
		{"CL.THROTTLE", "k", "5", "10", "60"}, {"SW.INCR", "k", "10", "1000"}, {"SL.INCR", "k", "10", "1000"},
	}
	f.Fuzz(func(t *testing.T, entry []byte) {
		p := binary.LittleEndian.AppendUint16(append([]byte(nil), entry...), persistence.DumpVersion)
		p = binary.LittleEndian.AppendUint64(p, crc64.Checksum(p, crc64.MakeTable(crc64.ECMA)))
		if got := do(c, "RESTORE", "k", "0", p, "REPLACE"); got != "+OK\r\n" {
			if got != "-ERR Bad data format\r\n" && got != "-ERR DUMP payload version or checksum are wrong\r\n" {
				t.Fatalf("RESTORE answered %q", got)
			}
			return
		}
		for _, args := range reads {
			if got := do(c, args...); strings.Contains(got, "internal error") {
				t.Fatalf("%v after RESTORE of %x: %q", args, entry, got)
			}
		}
		dump := do(c, "DUMP", "k")
		if strings.HasPrefix(dump, "$") {
			if got := do(c, "RESTORE", "k2", "0", bulkOf(t, []byte(dump)), "REPLACE"); got != "+OK\r\n" {
				t.Fatalf("the restored key's DUMP does not restore: %q", got)
			}
		}
		do(c, "DEL", "k", "k2")
	})
}
