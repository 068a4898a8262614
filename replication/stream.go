package replication

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/limitdb/limitdb/engine"
)

// ErrLagging is what a Reader returns once the stream has dropped bytes it
// had not read: its replica is too far behind and must resynchronise.
var ErrLagging = errors.New("replication: the reader fell behind the stream's backlog")

// Stream is the change stream (doc.go): a primary's engine journal, or
// what a replica applied from its primary, kept at the primary's offsets.
// It holds at least the last backlog bytes, and whatever its Readers have
// not read yet up to maxLag bytes behind the end.
type Stream struct {
	mu      sync.Mutex
	id      string // master_replid
	id2     string // master_replid2: the history this one continues
	off2    int64  // second_repl_offset: id2 is valid up to here (-1: none)
	start   int64  // the offset of buf[0]
	buf     []byte
	active  bool  // repl_backlog_active: a replica or the file reads it
	backlog int64 // repl-backlog-size
	maxLag  int64 // how far behind a Reader may fall before it is dropped
	readers []*Reader
	scratch []byte
	bad     int64 // units that could not be encoded (engine codec errors)

	unpublished atomic.Bool  // records were added that readers were not woken for (Publish)
	endAt       atomic.Int64 // end(), for Offset without the lock
}

// NewStream returns an empty stream with a new replication ID.
func NewStream(backlog int64) *Stream {
	return &Stream{id: NewID(), off2: -1, backlog: max(backlog, 16<<10), maxLag: 256 << 20}
}

// NewID is a new replication (or run) ID: 40 hex digits, as Redis's.
func NewID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Record implements engine.Journal: it appends the unit as one record.
func (s *Stream) Record(flushed bool, changes []engine.Change) {
	s.mu.Lock()
	n := len(s.buf)
	var err error
	s.buf, s.scratch, err = appendUnit(s.buf, s.scratch, flushed, changes)
	if err != nil { // an entry with no codec: drop the record, count it
		s.buf = s.buf[:n]
		s.bad++
	}
	s.endAt.Store(s.end())
	s.unpublished.Store(true)
	s.trimIfLong()
	s.mu.Unlock()
}

// Expired implements engine.Journal: it appends a step of active expiry's
// deletions as one DROP record.
func (s *Stream) Expired(keys [][]byte) {
	s.mu.Lock()
	s.buf = appendDrop(s.buf, keys)
	s.endAt.Store(s.end())
	s.unpublished.Store(true)
	s.trimIfLong()
	s.mu.Unlock()
}

// Publish wakes the readers when records were added since the last call:
// the command layer calls it once per batch of a connection's commands, so
// a replica's sender wakes once per batch, not once per write. (Readers
// also look every few milliseconds, for writes nobody publishes.)
func (s *Stream) Publish() {
	if !s.unpublished.Load() || !s.unpublished.Swap(false) {
		return
	}
	s.mu.Lock()
	s.wakeReaders()
	s.mu.Unlock()
}

// Append appends whole records, raw: what a replica applied, a PING, a
// GETACK, a SECTION.
func (s *Stream) Append(rec []byte) {
	s.mu.Lock()
	s.buf = append(s.buf, rec...)
	s.endAt.Store(s.end())
	s.wakeReaders()
	s.trimIfLong()
	s.mu.Unlock()
}

// wakeReaders tells every reader the stream has grown. The caller holds mu.
func (s *Stream) wakeReaders() {
	for _, r := range s.readers {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// trimIfLong trims the buffer once it holds twice the backlog. The caller
// holds mu.
func (s *Stream) trimIfLong() {
	if int64(len(s.buf)) > 2*s.backlog+64<<10 {
		s.trim()
	}
}

// trim drops the bytes before the last backlog that every reader has read;
// a reader more than maxLag behind is dropped instead of kept. The caller
// holds mu.
func (s *Stream) trim() {
	end := s.end()
	cut := end - s.backlog
	for _, r := range s.readers {
		if r.pos >= cut {
			continue
		}
		if end-r.pos > s.maxLag && !r.keep {
			r.lagging = true
			continue
		}
		cut = r.pos
	}
	if cut <= s.start {
		return
	}
	n := copy(s.buf, s.buf[cut-s.start:])
	s.buf = s.buf[:n]
	s.start = cut
	if cap(s.buf) > 4*int(s.backlog) && n < cap(s.buf)/4 { // give a past burst's memory back
		s.buf = append(make([]byte, 0, 2*n), s.buf...)
	}
}

func (s *Stream) end() int64 { return s.start + int64(len(s.buf)) }

// Offset is master_repl_offset: the bytes the stream has carried.
func (s *Stream) Offset() int64 { return s.endAt.Load() }

// IDs returns the replication ID, the previous one and the offset up to
// which that one is valid (-1 when there is none).
func (s *Stream) IDs() (id, id2 string, off2 int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id, s.id2, s.off2
}

// BacklogInfo is INFO's repl_backlog_* fields.
type BacklogInfo struct {
	Active             bool
	Size               int64
	FirstByteOffset    int64
	HistLen            int64
	MasterReplOffset   int64
	UnencodableRecords int64
}

// Backlog reports the backlog's state.
func (s *Stream) Backlog() BacklogInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := BacklogInfo{Active: s.active, Size: s.backlog, MasterReplOffset: s.end(), UnencodableRecords: s.bad}
	if s.active { // as Redis: no backlog, no first byte
		b.HistLen = min(int64(len(s.buf)), s.backlog)
		b.FirstByteOffset = s.end() - b.HistLen + 1
	}
	return b
}

// SetBacklog changes repl-backlog-size.
func (s *Stream) SetBacklog(n int64) {
	s.mu.Lock()
	s.backlog = max(n, 16<<10)
	s.mu.Unlock()
}

// Reset starts the stream over at off with id and nothing held: a replica
// after a full resynchronisation, at its primary's offset. Readers are
// dropped.
func (s *Stream) Reset(id string, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id, s.id2, s.off2 = id, "", -1
	s.start, s.buf = off, s.buf[:0]
	s.endAt.Store(off)
	for _, r := range s.readers {
		r.lagging = true
	}
	s.wakeReaders()
}

// Shift takes a new ID and keeps the old one as id2, valid up to the
// current offset: a replica promoted to primary, whose former siblings
// continue from it with the old ID.
func (s *Stream) Shift() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id2, s.off2, s.id = s.id, s.end()+1, NewID()
}

// Adopt switches to the ID a primary answered +CONTINUE with, keeping the
// current one as id2 (a replica whose primary was promoted).
func (s *Stream) Adopt(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.id {
		s.id2, s.off2, s.id = s.id, s.end()+1, id
	}
}

// Continue returns a Reader from the byte a replica asks for with "PSYNC
// id next" (next = its offset + 1), when the stream still holds it in the
// history named id; nil otherwise (a full resynchronisation is needed).
func (s *Stream) Continue(id string, next int64) *Reader {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := next - 1
	if !s.active || !(id == s.id || (id == s.id2 && next <= s.off2)) || from < s.start || from > s.end() {
		return nil
	}
	return s.addReader(from, false)
}

// Tail returns a Reader from the current end and that offset: what a full
// resynchronisation streams after its snapshot (taken after this call). It
// makes the backlog active.
func (s *Stream) Tail(keep bool) (*Reader, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active = true
	return s.addReader(s.end(), keep), s.end()
}

// Activate makes the backlog active without a reader (a replica keeps the
// history it applies).
func (s *Stream) Activate() {
	s.mu.Lock()
	s.active = true
	s.mu.Unlock()
}

func (s *Stream) addReader(from int64, keep bool) *Reader {
	r := &Reader{s: s, pos: from, keep: keep, wake: make(chan struct{}, 1)}
	s.readers = append(s.readers, r)
	return r
}

// Reader reads the stream from an offset: one replica's sender, or the
// append-only file's writer.
type Reader struct {
	s       *Stream
	pos     int64 // guarded by s.mu
	keep    bool  // never dropped for lagging: the stream holds its bytes
	lagging bool
	wake    chan struct{}
}

// Next appends to dst up to max bytes the reader has not read, and
// advances past them. It returns nothing when there is nothing new (wait
// on Wake), and ErrLagging once the stream dropped unread bytes.
func (r *Reader) Next(dst []byte, max int) ([]byte, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.lagging || r.pos < s.start {
		return dst, ErrLagging
	}
	n := min(s.end()-r.pos, int64(max))
	i := r.pos - s.start
	dst = append(dst, s.buf[i:i+n]...)
	r.pos += n
	return dst, nil
}

// Pos is the offset up to which the reader has read.
func (r *Reader) Pos() int64 {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.pos
}

// Wake receives when the stream has grown (or dropped the reader).
func (r *Reader) Wake() <-chan struct{} { return r.wake }

// Close detaches the reader from the stream.
func (r *Reader) Close() {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.readers {
		if x == r {
			s.readers = append(s.readers[:i], s.readers[i+1:]...)
			return
		}
	}
}
