package engine

import (
	"unsafe"

	"github.com/limitdb/limitdb/engine/window"
	"github.com/limitdb/limitdb/shard"
)

// A sliding log's state, kept apart.
//
// SL.INCR on a random key pays a cache miss for each place its state is
// read from before it can decide. A sliding log's window.Ring is therefore
// kept in three parts: its Seen, State (window.Ring.State) and Oldest in
// the entry's A, B and C, and its stamps' buffer in Ext. Where the buffer
// lives depends on its size:
//
//   - up to maxInlineWords, in the key's own entry (shard words): an
//     inlineLog, [words][Oldest][stamps...]. The lookup that found the key
//     brought in its page, often the line the stamps start on, and there is
//     no slot, pointer or heap allocation to go through. Oldest (C) lives
//     there too: the entry's B holds the State, not a slot number.
//   - beyond, a bigLog in the key's ext slot (extslab.go), its buffer a
//     pointer further.
//
// Staging is as in extbox.go, without a box. Record appends past the
// stamps the key's state sees, so Apply returns the key's own words as an
// inlineStage (a bigLog's buffer as a bigStage), and store has only the
// entry's numbers and C to write; a dropped write leaves the key's state
// as it was. A ring that moves (grows, shrinks, or is new) goes to a new
// buffer on the heap, a logRing, which store copies into the key's entry,
// re-placing the entry when the size differs. Apply on a staged entry
// records on a copy. Get copies the buffer (cloneExt).
//
// Why in the entry: on the wire, with 100k random keys, SL.INCR runs at
// 0.83-0.84 of CL.THROTTLE's throughput with its stamps there, against
// 0.72-0.78 with them behind an ext slot (ROUNDS=60 bench/ab.sh A B, with
// and without GROW=1; docs/performance-history.md).

// maxInlineWords is the largest buffer kept in the key's entry (and as an
// array while it moves): 256 words, 2 KiB, a limit of 100 at its fullest
// even with costs.
const maxInlineWords = 256

// inlineLog is the start of a sliding log's words in its key's entry:
// the number of stamp words, the ring's Oldest (Entry.C), then the
// stamps. As Ext it is valid while the entry stays where it is: within
// the callback of Do, DoMulti or RangeShard that loaded it, before any
// write (a write may move the shard's arena). inlineStage is the same
// memory as the Ext of an entry Apply returned: the stamp was appended
// past those the key's state sees, so store has only C and the entry's
// numbers to write.
type (
	inlineLog   struct{ size, c int64 }
	inlineStage inlineLog
)

// inlineHeader is the words of an inlineLog before its stamps.
const inlineHeader = 2

// asInline is the inlineLog at the start of a key's words w.
func asInline(w []int64) *inlineLog { return (*inlineLog)(unsafe.Pointer(unsafe.SliceData(w))) }

func (l *inlineLog) words() []int64 {
	return unsafe.Slice((*int64)(unsafe.Add(unsafe.Pointer(l), inlineHeader*8)), l.size)
}
func (l *inlineLog) staged() any { return (*inlineStage)(l) }
func (l *inlineLog) cloneExt() any {
	ext, buf := newLogBuf(int(l.size))
	copy(buf, l.words())
	return ext
}

func (s *inlineStage) words() []int64 { return (*inlineLog)(s).words() }
func (s *inlineStage) cloneExt() any  { return (*inlineLog)(s).cloneExt() }

// inlineHome is the Ext of a sliding log whose words are already in its
// key's entry, as DoMulti finds before it stores anything (its writes may
// move a shard's arena, and with it the words an inlineStage points at).
type inlineHome struct{}

// entryWords is the number of words of its key's entry that ent keeps a
// sliding log's buffer in: 0 for a buffer kept elsewhere (a bigLog) or
// another kind. It must be called while ent's Ext is valid.
func entryWords(ent *Entry) int {
	if ent.Kind != KindSlidingLog {
		return 0
	}
	if l := inlineOf(ent.Ext); l != nil {
		return inlineHeader + int(l.size)
	}
	if x, ok := ent.Ext.(logWords); ok {
		if n := len(x.words()); n <= maxInlineWords {
			return inlineHeader + n
		}
	}
	return 0
}

// inlineOf is the key's words an Ext loaded from an entry points at, as
// loaded or staged; nil for any other Ext.
func inlineOf(ext any) *inlineLog {
	switch x := ext.(type) {
	case *inlineStage:
		return (*inlineLog)(x)
	case *inlineLog:
		return x
	}
	return nil
}

// inlinePlan is how store keeps ent over a key's present entry, whose
// words are have (nil if it has none, or there is no entry): the number of
// words of the key's entry ent's buffer goes in (entryWords), and home when
// they are have, which already hold it. Words loaded from another key are
// copied out first, into ent.Ext: the write may move them.
func inlinePlan(have []int64, ent *Entry) (words int, home bool) {
	if _, ok := ent.Ext.(inlineHome); ok {
		return len(have), true
	}
	words = entryWords(ent)
	l := inlineOf(ent.Ext)
	if l == nil {
		return words, false
	}
	if have != nil && asInline(have) == l {
		return words, true
	}
	ent.Ext = l.cloneExt()
	return words, false
}

// logWords is a sliding log's buffer, stored or staged.
type logWords interface{ words() []int64 }

// storedLog is a key's buffer as stored.
type storedLog interface {
	logWords
	clonedExt
	// staged is the same buffer as the Ext of an entry Apply returns.
	staged() any
}

// loadRing sets r to the ring of a sliding log's entry e; false if its
// Ext is something else.
func loadRing(r *window.Ring, e *Entry) bool {
	if e.Ext == nil {
		*r = window.Ring{}
		return true
	}
	x, ok := e.Ext.(logWords)
	if ok {
		r.Unpack(e.A, e.B, e.C, x.words())
	}
	return ok
}

// The array types of the buffers.
type (
	words4   [4]int64
	words8   [8]int64
	words16  [16]int64
	words32  [32]int64
	words64  [64]int64
	words128 [128]int64
	words256 [256]int64
)

// logRing is a buffer of at most maxInlineWords on the heap, on its way
// to a key's entry: a ring that moved, a copy (Get), a decoded one. A is
// one of the arrays above, so that it is one allocation. It shares memory
// with no key, so Apply records on it in place (staged is itself).
type logRing[A any] struct{ w A }

func (r *logRing[A]) words() []int64 {
	return unsafe.Slice((*int64)(unsafe.Pointer(r)), unsafe.Sizeof(r.w)/8)
}
func (r *logRing[A]) staged() any   { return r }
func (r *logRing[A]) cloneExt() any { c := *r; return &c }

// bigLog is a buffer of more than maxInlineWords; bigStage, as staged.
type (
	bigLog   struct{ w []int64 }
	bigStage bigLog
)

func (r *bigLog) words() []int64  { return r.w }
func (r *bigLog) staged() any     { return (*bigStage)(r) }
func (r *bigLog) cloneExt() any   { return &bigLog{w: append([]int64(nil), r.w...)} }
func (r *bigLog) extBytes() int64 { return 24 + 8*int64(cap(r.w)) }

func (s *bigStage) words() []int64 { return s.w }
func (s *bigStage) cloneExt() any  { return (*bigLog)(s).cloneExt() }

func (s *bigStage) commit(stored any) (any, bool) {
	r := (*bigLog)(s)
	if x, ok := stored.(*bigLog); ok && x == r {
		return r, true
	}
	return r.cloneExt(), false
}

// newLogRing makes the buffers of one array type, for newLogBuf.
func newLogRing[A any]() storedLog { return new(logRing[A]) }

// newLogRings is indexed by size class: 4<<class words.
var newLogRings = [...]func() storedLog{
	newLogRing[words4], newLogRing[words8], newLogRing[words16], newLogRing[words32],
	newLogRing[words64], newLogRing[words128], newLogRing[words256],
}

// newLogBuf returns a new buffer of at least words words, zeroed, as
// stored, and its words.
func newLogBuf(words int) (ext any, buf []int64) {
	if words > maxInlineWords {
		x := &bigLog{w: make([]int64, words)}
		return x, x.w
	}
	class := 0
	for 4<<class < words {
		class++
	}
	x := newLogRings[class]()
	return x, x.words()
}

// loadLog sets ent's sliding log from the words of st's entry in shard i,
// when the log lives there.
func (e *Engine) loadLog(i int, st *stored, ent *Entry) {
	if w := e.tab.Shard(i).Words(st); w != nil {
		l := asInline(w)
		ent.Ext, ent.C = l, l.c
	}
}

// settleLogs marks, before any of DoMulti's writes can move a shard's
// arena, which of its sliding logs' words are already in place.
func (e *Engine) settleLogs(keys [][]byte, at []keyAt, ents []Entry) {
	for k, key := range keys {
		if at[k].dup || ents[k].Kind != KindSlidingLog {
			continue
		}
		s := e.tab.Shard(at[k].i)
		var have []int64
		if cur, _ := s.GetTagged(key, at[k].h); cur != nil {
			have = s.Words(cur)
		}
		if _, home := inlinePlan(have, &ents[k]); home {
			ents[k].Ext = inlineHome{}
		}
	}
}

// storeLog is store for a key whose new or current entry is a sliding log:
// an entry that keeps words after its key. ent goes in an entry with room
// for exactly its words, the log's buffer copied in unless it is already
// there.
// before is cur's Ext state's memory when it was found (found.payload);
// the change in what the key holds is accounted at the end.
func (e *Engine) storeLog(i int, s *shard.Shard[stored], key []byte, h uint64, cur *stored, tag *byte, ent Entry, before int64) {
	var have []int64 // cur's words: only a sliding log's entry has any
	if cur != nil && (ent.Kind == KindSlidingLog || Kind(*tag&^tagExt) == KindSlidingLog) {
		have = s.Words(cur)
	}
	oldWords := len(have)
	words, home := inlinePlan(have, &ent)
	if cur != nil && len(have) != words {
		// The entry has room for other words than ent keeps in it: ent
		// goes in an entry of its own (the key's memory accounting, which
		// counts the key and not its state, is unchanged). Refused before
		// the old entry goes, at capacity: the key keeps its state.
		if !s.Fits(shard.EntrySizeWords[stored](len(key), words)) {
			panic(ErrShardFull)
		}
		e.dropExt(i, *cur, *tag)
		s.DeleteHashed(key, h)
		cur, tag = s.InsertWords(key, h, words)
		have = s.Words(cur)
	}
	if cur == nil {
		cur, tag = s.InsertWords(key, h, words)
		e.stats[i].bytes.Add(keyCost(key))
		have = s.Words(cur)
	}
	old, hadExt := *cur, *tag&tagExt != 0
	*cur = stored{Expire: ent.Expire, A: ent.A, B: ent.B}
	*tag = byte(ent.Kind)
	switch {
	case words > 0:
		// The sliding log in the entry's words.
		l := asInline(have)
		if !home {
			// A buffer that moved, or the key is new: copy it in.
			l.size = int64(words - inlineHeader)
			copy(l.words(), ent.Ext.(logWords).words())
		}
		l.c = ent.C
		if hadExt {
			e.side[i].ext.drop(old.B)
		}
	case ent.Ext != nil:
		*tag |= tagExt
		cur.B = e.storeExt(i, old.B, hadExt, &ent)
	case hadExt:
		e.side[i].ext.drop(old.B)
	}
	delta := -before
	if words != oldWords {
		delta += wordsBytes(len(key), words) - wordsBytes(len(key), oldWords)
	}
	if *tag&tagExt != 0 {
		delta += e.extPayload(i, cur, *tag)
	}
	if delta != 0 {
		e.stats[i].bytes.Add(delta)
	}
}
