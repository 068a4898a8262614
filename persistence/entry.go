package persistence

import (
	"errors"
	"fmt"

	"github.com/limitdb/limitdb/engine"
)

// ErrBadEntry is the wrapped error of an entry that decodes but that
// limitdb never writes: a hash, set, sorted set or list with no contents
// (limitdb deletes a collection's key with its last element), or one whose
// contents are missing altogether. Such an entry would be a key that every
// later command trips over, kept by SAVE, the append-only file and every
// replica, so it is refused wherever entries come from another process: a
// snapshot, a primary's stream, the append-only file, RESTORE and MIGRATE.
// This is Redis's sanitize-dump-payload, always on.
var ErrBadEntry = errors.New("structurally invalid entry")

// DecodeEntry decodes the one entry that b holds, every byte of it, and
// checks its structure (ErrBadEntry). It is engine.DecodeEntry for bytes
// another process wrote.
func DecodeEntry(b []byte) (engine.Entry, error) {
	ent, n, err := engine.DecodeEntry(b)
	if err != nil {
		return engine.Entry{}, err
	}
	if n != len(b) {
		return engine.Entry{}, fmt.Errorf("%w: %d stray bytes after the entry", ErrBadEntry, len(b)-n)
	}
	if err := CheckEntry(ent); err != nil {
		return engine.Entry{}, err
	}
	return ent, nil
}

// CheckEntry reports (ErrBadEntry) an entry whose structure limitdb never
// makes. The codec already refuses counts that do not match the bytes,
// lengths past the end, repeated members and NaN scores; what is left is
// what decodes cleanly and is still wrong.
func CheckEntry(ent engine.Entry) error {
	switch ent.Kind {
	case engine.KindHash, engine.KindSet, engine.KindZSet, engine.KindList:
	default:
		return nil
	}
	if c, ok := ent.Ext.(interface{ Len() int }); !ok || c.Len() == 0 {
		return fmt.Errorf("%w: a %v with no elements", ErrBadEntry, ent.Kind)
	}
	return nil
}
