package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// SectionName is the snapshot section that keeps the replication ID and
// offset the keyspace holds (doc.go, "Resuming after a restart"), as
// Redis keeps repl-id and repl-offset among an RDB file's aux fields.
const SectionName = "replication"

// savedVersion is the section's format version.
const savedVersion = 1

// Saved is the replication ID and offset a snapshot's keys hold at least:
// the history a restarted node resumes.
type Saved struct {
	ID     string
	Offset int64
}

// SaveSection is the section's bytes, taken when a snapshot begins
// (persistence.Sections.AddEarly): the stream's ID and offset when the
// keyspace is its history up to there and the stream is kept (a replica,
// or a primary with a backlog); nothing otherwise, as Redis saves no
// replication info then. A replica in the middle of a full
// resynchronisation saves nothing.
func (m *Manager) SaveSection() ([]byte, error) {
	known := m.known.Load()
	id, off, active := m.stream.mark()
	if !known || !active {
		return nil, nil
	}
	return appendSaved(nil, Saved{ID: id, Offset: off}), nil
}

// appendSaved encodes s: a version byte, uvarint(len(id)) id, uvarint
// offset.
func appendSaved(b []byte, s Saved) []byte {
	b = append(b, savedVersion)
	b = binary.AppendUvarint(b, uint64(len(s.ID)))
	b = append(b, s.ID...)
	return binary.AppendUvarint(b, uint64(s.Offset))
}

var errBadSaved = errors.New("replication: bad replication section")

// decodeSaved decodes what appendSaved wrote; empty is no history.
func decodeSaved(b []byte) (Saved, bool, error) {
	if len(b) == 0 {
		return Saved{}, false, nil
	}
	if b[0] != savedVersion {
		return Saved{}, false, fmt.Errorf("%w: version %d", errBadSaved, b[0])
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || n != idLen || uint64(len(b)-1-k) < n {
		return Saved{}, false, fmt.Errorf("%w: replication ID", errBadSaved)
	}
	id := string(b[1+k : 1+k+int(n)])
	rest := b[1+k+int(n):]
	off, k := binary.Uvarint(rest)
	if k <= 0 || k != len(rest) || off > 1<<62 {
		return Saved{}, false, fmt.Errorf("%w: offset", errBadSaved)
	}
	if !validID(id) {
		return Saved{}, false, fmt.Errorf("%w: replication ID %q", errBadSaved, id)
	}
	return Saved{ID: id, Offset: int64(off)}, true, nil
}

// idLen is the length of a replication ID: 40 hex digits.
const idLen = 40

func validID(id string) bool {
	if len(id) != idLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// LoadSection takes the section of the snapshot loaded at start-up; Restore
// then applies it. After Restore (a full resynchronisation's snapshot
// carries its primary's section) it is ignored: the link starts the stream
// over at the offset the primary answered.
func (m *Manager) LoadSection(b []byte) error {
	s, ok, err := decodeSaved(b)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.restored {
		m.saved = nil
		if ok {
			m.saved = &s
		}
	}
	return nil
}

// Restore applies, once, before the node serves or starts the append-only
// file, the replication ID and offset its snapshot kept (fromSnapshot:
// the keyspace was loaded from the snapshot file, not from an append-only
// file, whose records may have gone past it; Redis 7.0 restores them from
// an RDB file only). As Redis does:
//
//   - a node that starts as a replica (replica) continues that history: it
//     asks its primary "PSYNC id offset+1"; with nothing kept, "PSYNC ? -1";
//   - a node that starts as a primary takes a new ID, keeps the kept one as
//     master_replid2 up to offset+1 and counts its offsets on from there,
//     so that its replicas continue where they were.
func (m *Manager) Restore(replica, fromSnapshot bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.restored {
		return
	}
	m.restored = true
	s := m.saved
	m.saved = nil
	if !fromSnapshot {
		s = nil
	}
	switch {
	case replica && s != nil:
		m.stream.Resume(s.ID, s.Offset, false)
		m.known.Store(true)
		m.logf("replication ID %s and offset %d restored from the snapshot: the link asks to continue them", s.ID, s.Offset)
	case replica:
		m.known.Store(false)
	case s != nil:
		m.stream.Resume(s.ID, s.Offset, true)
		m.startJournal()
		id, _, _ := m.stream.IDs()
		m.logf("replication ID %s and offset %d restored from the snapshot as the second ID; new ID %s", s.ID, s.Offset, id)
	}
}
