package replication

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
)

// ErrLagging is what a Reader returns once the stream has dropped bytes it
// had not read: its replica is too far behind and must resynchronise.
var ErrLagging = errors.New("replication: the reader fell behind the stream's backlog")

// Stream is the change stream (doc.go): a primary's engine journal, or
// what a replica applied from its primary, kept at the primary's offsets.
// It holds at least the last backlog bytes, and whatever its Readers have
// not read yet up to maxLag bytes behind the end.
//
// The bytes live in chunks of about chunkSize, appended to and never
// written again below their length: trimming drops whole chunks from the
// front, so it copies nothing, and a Reader can hand out a slice of a
// chunk that stays valid while the stream moves on (NextView). A dropped
// chunk that no Reader's view is in is reused for new bytes.
type Stream struct {
	mu      sync.Mutex
	id      string   // master_replid
	id2     string   // master_replid2: the history this one continues
	off2    int64    // second_repl_offset: id2 is valid up to here (-1: none)
	start   int64    // the offset of chunks[0][0]
	size    int64    // the bytes the chunks hold
	chunks  [][]byte // the last is appended to
	free    [][]byte // dropped chunks that no view is in, to reuse
	active  bool     // repl_backlog_active: a replica or the file reads it
	backlog int64    // repl-backlog-size
	maxLag  int64    // how far behind a Reader may fall before it is dropped
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

// chunkSize is the size of the stream's chunks: a record that would take
// its chunk past it starts the next one.
const chunkSize = 64 << 10

// Record implements engine.Journal: it appends the unit as one record.
func (s *Stream) Record(flushed bool, changes []engine.Change) {
	s.mu.Lock()
	c := s.last()
	rec, scratch, err := persistence.AppendUnit(c[len(c):], s.scratch, flushed, changes)
	s.scratch = scratch
	if err != nil { // an entry with no codec: drop the record, count it
		s.bad++
	} else {
		s.commit(c, rec)
	}
	s.markUnpublished()
	s.mu.Unlock()
}

// commit takes rec, appended to c, the last chunk, into the stream: in
// place when it fit in c's room, else (append moved it) copied across
// chunks. The caller holds mu.
func (s *Stream) commit(c, rec []byte) {
	if len(rec) > cap(c)-len(c) {
		s.add(rec)
		return
	}
	s.grow(len(rec))
}

// last is the chunk records are appended to, started when there is none
// or the last is full. The caller holds mu.
func (s *Stream) last() []byte {
	if n := len(s.chunks); n > 0 && len(s.chunks[n-1]) < chunkSize {
		return s.chunks[n-1]
	}
	s.trim() // a chunk is full: a good time to drop old ones
	var c []byte
	if k := len(s.free); k > 0 {
		c, s.free[k-1], s.free = s.free[k-1][:0], nil, s.free[:k-1]
	} else {
		c = make([]byte, 0, chunkSize+chunkSize/4)
	}
	s.chunks = append(s.chunks, c)
	return c
}

// maxFree is how many dropped chunks the stream keeps for reuse: a
// megabyte, what senders that fell a few milliseconds behind release at
// once when they catch up.
const maxFree = 16

// recycle keeps c, dropped from the stream at offset at, for reuse unless
// a reader's view is in it. The caller holds mu.
func (s *Stream) recycle(c []byte, at int64) {
	if len(s.free) >= maxFree {
		return
	}
	for _, r := range s.readers {
		if r.view >= at && r.view < at+int64(len(c)) {
			return
		}
	}
	s.free = append(s.free, c)
}

// grow takes n bytes written in place after the last chunk's end into it.
// The caller holds mu.
func (s *Stream) grow(n int) {
	i := len(s.chunks) - 1
	s.chunks[i] = s.chunks[i][:len(s.chunks[i])+n]
	s.size += int64(n)
	s.endAt.Store(s.end())
}

// add appends b, across as many chunks as it takes. The caller holds mu.
func (s *Stream) add(b []byte) {
	for len(b) > 0 {
		c := s.last() // it has room: it is shorter than chunkSize
		n := copy(c[len(c):cap(c)], b)
		s.grow(n)
		b = b[n:]
	}
}

// Expired implements engine.Journal: it appends a step of active expiry's
// deletions as one DROP record.
func (s *Stream) Expired(keys [][]byte) {
	s.mu.Lock()
	c := s.last()
	s.commit(c, persistence.AppendDrop(c[len(c):], keys))
	s.markUnpublished()
	s.mu.Unlock()
}

// markUnpublished notes that records were added for Publish to wake the
// readers for; a load first, as a burst of records between two Publish
// calls needs one store.
func (s *Stream) markUnpublished() {
	if !s.unpublished.Load() {
		s.unpublished.Store(true)
	}
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
	s.wakeReaders(true)
	s.mu.Unlock()
}

// Append appends whole records, raw: what a replica applied, a PING, a
// GETACK, a SECTION.
func (s *Stream) Append(rec []byte) {
	s.mu.Lock()
	s.add(rec)
	s.wakeReaders(false)
	s.mu.Unlock()
}

// Quiet makes Publish leave r asleep: the event loops push its replica
// the records they publish themselves (Manager.Publish). Append and Reset
// still wake it.
func (s *Stream) Quiet(r *Reader) {
	s.mu.Lock()
	r.quiet = true
	s.mu.Unlock()
}

// wakeReaders tells every reader the stream has grown (but quiet ones,
// when published). The caller holds mu.
func (s *Stream) wakeReaders(published bool) {
	for _, r := range s.readers {
		if published && r.quiet {
			continue
		}
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// trim drops the chunks before the last backlog that every reader has
// read; a reader more than maxLag behind is dropped instead of kept. The
// caller holds mu.
func (s *Stream) trim() {
	end := s.end()
	cut := end - s.backlog
	if !s.active { // no backlog: only what readers have to read
		cut = end
	}
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
	drop := 0
	for drop < len(s.chunks) && s.start+int64(len(s.chunks[drop])) <= cut {
		n := int64(len(s.chunks[drop]))
		s.recycle(s.chunks[drop], s.start)
		s.start += n
		s.size -= n
		drop++
	}
	if drop > 0 {
		n := copy(s.chunks, s.chunks[drop:])
		clear(s.chunks[n:])
		s.chunks = s.chunks[:n]
	}
}

func (s *Stream) end() int64 { return s.start + s.size }

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
		b.HistLen = min(s.size, s.backlog)
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

// dropBacklog drops the backlog (Manager.freeBacklog): a new ID and none
// before it, inactive, holding only what readers have still to read. It
// returns how many readers there are.
func (s *Stream) dropBacklog() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id, s.id2, s.off2, s.active = NewID(), "", -1, false
	s.trim()
	return len(s.readers)
}

// Reset starts the stream over at off with id and nothing held: a replica
// after a full resynchronisation, at its primary's offset. Readers are
// dropped.
func (s *Stream) Reset(id string, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id, s.id2, s.off2 = id, "", -1
	clear(s.chunks)
	s.start, s.size, s.chunks = off, 0, s.chunks[:0]
	s.endAt.Store(off)
	for _, r := range s.readers {
		r.lagging = true
	}
	s.wakeReaders(false)
}

// mark is the ID, the offset and whether the backlog is active, at one
// instant.
func (s *Stream) mark() (string, int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id, s.end(), s.active
}

// Resume starts the stream, which holds nothing yet, at off in the history
// id that a snapshot kept (Manager.Restore): as that history's reader (a
// replica), or, on a primary, under a new ID with id kept as id2 up to
// off+1, the backlog active. Readers, which have read nothing, move to off.
func (s *Stream) Resume(id string, off int64, primary bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.chunks)
	s.start, s.size, s.chunks = off, 0, s.chunks[:0]
	s.endAt.Store(off)
	for _, r := range s.readers {
		r.pos = off
	}
	if primary {
		s.id2, s.off2, s.active = id, off+1, true
	} else {
		s.id, s.id2, s.off2 = id, "", -1
	}
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
	r := &Reader{s: s, pos: from, view: -1, keep: keep, wake: make(chan struct{}, 1)}
	s.readers = append(s.readers, r)
	return r
}

// Reader reads the stream from an offset: one replica's sender, or the
// append-only file's writer.
type Reader struct {
	s       *Stream
	pos     int64 // guarded by s.mu
	view    int64 // the offset of the view NextView gave last (-1: none); guarded by s.mu
	keep    bool  // never dropped for lagging: the stream holds its bytes
	quiet   bool  // Publish does not wake it (Quiet); guarded by s.mu
	lagging bool
	wake    chan struct{}
}

// Next appends to dst up to max bytes the reader has not read, and
// advances past them. It returns nothing when there is nothing new (wait
// on Wake), and ErrLagging once the stream dropped unread bytes.
func (r *Reader) Next(dst []byte, max int) ([]byte, error) {
	for n := 0; n < max; {
		b, err := r.NextView(max - n)
		if err != nil {
			return dst, err
		}
		if len(b) == 0 {
			break
		}
		dst = append(dst, b...)
		n += len(b)
	}
	return dst, nil
}

// NextView is Next without a copy: the bytes it returns, up to max, are
// the stream's own, up to the end of the chunk that holds the reader's
// position. They stay valid and unchanged until the reader's next call
// (Next, NextView or Close), however the stream grows or trims.
func (r *Reader) NextView(max int) ([]byte, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	r.view = -1
	if r.lagging || r.pos < s.start {
		return nil, ErrLagging
	}
	at := s.start
	for _, c := range s.chunks {
		if n := int64(len(c)); r.pos < at+n {
			i := r.pos - at
			j := i + min(n-i, int64(max)) // not i+max: max may be math.MaxInt
			b := c[i:j:j]
			r.view = r.pos
			r.pos += int64(len(b))
			return b, nil
		}
		at += int64(len(c))
	}
	return nil, nil
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
