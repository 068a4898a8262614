package engine

import (
	"encoding/binary"
	"errors"
	"math"
	"unsafe"

	"github.com/tidwall/btree"
)

// ZSet is a sorted set (KindZSet): members ordered by score, then by member
// bytewise, as Redis orders them.
//
// While it is small (at most 128 members of at most 64 bytes, Redis's
// listpack) it is one byte slice of its items in order, each its score's
// IEEE 754 bits (8 bytes, little-endian), its member's length (1 byte) and
// the member; every operation walks it, as Redis walks a listpack. The
// garbage collector does not look inside a byte slice, so a keyspace of
// many small sorted sets (sliding logs) costs a collection one object each,
// not a tree node and a string per member. Once it is not small
// ("skiplist"), for good, the order lives in a B-tree of (score, member)
// that counts its items, so a rank is found in O(log² n) (GetAt bisected)
// and a range walks only what it returns, and a member's score in a member
// → score map.
type ZSet struct {
	small  []byte // the items while small; nil once tree is set
	n      int    // the items while small
	tree   *btree.BTreeG[ZItem]
	scores map[string]float64
	bytes  int64 // the tree's and the map's items' accounted memory
}

// ZItem is one member and its score. NaN is never a score.
type ZItem struct {
	Score  float64
	Member string
}

func zless(a, b ZItem) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Member < b.Member
}

// zsetDegree sets the B-tree's node size.
const zsetDegree = 16

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet { return &ZSet{} }

// Len is the number of members.
func (z *ZSet) Len() int {
	if z.tree == nil {
		return z.n
	}
	return z.tree.Len()
}

// Encoding is what OBJECT ENCODING answers: listpack or skiplist.
func (z *ZSet) Encoding() string {
	if z.tree != nil {
		return "skiplist"
	}
	return "listpack"
}

// A small set's item at off: its score, its member, and the offset of the
// next item.
func (z *ZSet) smallAt(off int) (score float64, member []byte, next int) {
	score = math.Float64frombits(binary.LittleEndian.Uint64(z.small[off:]))
	l := int(z.small[off+8])
	return score, z.small[off+9 : off+9+l], off + 9 + l
}

// smallFind is the offset and rank of member in a small set, or -1.
func (z *ZSet) smallFind(member []byte) (off, rank int, score float64) {
	for off, rank = 0, 0; off < len(z.small); rank++ {
		s, m, next := z.smallAt(off)
		if string(m) == string(member) {
			return off, rank, s
		}
		off = next
	}
	return -1, -1, 0
}

// smallOffsets fills offs with the offset of each item of a small set, in
// order, and one past the last; it returns offs[:n+1].
func (z *ZSet) smallOffsets(offs *[maxPackedEntries + 1]int) []int {
	off := 0
	for i := 0; i < z.n; i++ {
		offs[i] = off
		off += 9 + int(z.small[off+8])
	}
	offs[z.n] = off
	return offs[:z.n+1]
}

// smallCut removes the item at off.
func (z *ZSet) smallCut(off int) {
	z.small = splice(z.small, off, off+9+int(z.small[off+8]), nil)
	z.n--
}

// smallInsert adds (score, member), not there yet, at its place.
func (z *ZSet) smallInsert(score float64, member []byte) {
	at := len(z.small)
	for off := 0; off < len(z.small); {
		s, m, next := z.smallAt(off)
		if score < s || (score == s && string(member) < string(m)) {
			at = off
			break
		}
		off = next
	}
	var buf [9 + maxPackedValue]byte
	item := binary.LittleEndian.AppendUint64(buf[:0], math.Float64bits(score))
	item = append(append(item, byte(len(member))), member...)
	z.small = splice(z.small, at, at, item)
	z.n++
}

// itemBytes is one member's accounted memory once the set is big: its item
// in the tree and its entry in the map.
func itemBytes(member string) int64 {
	return int64(unsafe.Sizeof(ZItem{})) + int64(len(member)) + 16 + 8 + mapEntryBytes
}

// Score returns member's score.
func (z *ZSet) Score(member []byte) (float64, bool) {
	if z.tree == nil {
		off, _, s := z.smallFind(member)
		return s, off >= 0
	}
	s, ok := z.scores[string(member)]
	return s, ok
}

// Set gives member the score (not NaN), adding it if new; it reports
// whether the member is new. A score of -0 is kept as 0, as Redis keeps it.
func (z *ZSet) Set(score float64, member []byte) (added bool) {
	if score == 0 {
		score = 0
	}
	if z.tree == nil {
		off, _, old := z.smallFind(member)
		switch {
		case off >= 0 && old == score:
			return false
		case off >= 0:
			z.smallCut(off)
			z.smallInsert(score, member)
			return false
		case len(member) <= maxPackedValue && z.n+1 <= maxPackedEntries:
			z.smallInsert(score, member)
			return true
		}
		z.unpack()
	}
	if old, ok := z.scores[string(member)]; ok {
		if old == score {
			return false
		}
		it, _ := z.tree.Delete(ZItem{old, string(member)})
		it.Score = score
		z.tree.Set(it) // the member's string is reused
		z.scores[it.Member] = score
		return false
	}
	m := string(member)
	z.tree.Set(ZItem{score, m})
	z.scores[m] = score
	z.bytes += itemBytes(m)
	return true
}

// Remove removes member and reports whether it was there.
func (z *ZSet) Remove(member []byte) bool {
	if z.tree == nil {
		off, _, _ := z.smallFind(member)
		if off >= 0 {
			z.smallCut(off)
		}
		return off >= 0
	}
	score, ok := z.scores[string(member)]
	if ok {
		z.removeItem(ZItem{score, string(member)})
	}
	return ok
}

// removeItem removes it from a big set.
func (z *ZSet) removeItem(it ZItem) {
	z.tree.Delete(it)
	z.bytes -= itemBytes(it.Member)
	delete(z.scores, it.Member)
}

// Rank is member's 0-based rank in ascending order.
func (z *ZSet) Rank(member []byte) (int, bool) {
	if z.tree == nil {
		off, rank, _ := z.smallFind(member)
		return rank, off >= 0
	}
	score, ok := z.scores[string(member)]
	if !ok {
		return 0, false
	}
	return z.countBelow(ZItem{score, string(member)}), true
}

// countBelow is the number of items of a big set ordered before it.
func (z *ZSet) countBelow(it ZItem) int {
	lo, hi := 0, z.tree.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if at, _ := z.tree.GetAt(mid); zless(at, it) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// At is the item at 0-based ascending rank i (0 <= i < Len()).
func (z *ZSet) At(i int) ZItem {
	if z.tree == nil {
		var it ZItem
		z.Scan(i, false, func(x ZItem) bool { it = x; return false })
		return it
	}
	it, _ := z.tree.GetAt(i)
	return it
}

// ScoreRange is a range of scores: Min and Max with each end inclusive
// unless its Ex flag is set, as ZRANGEBYSCORE's "(" makes it.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

func (r ScoreRange) aboveMin(s float64) bool {
	return s > r.Min || (!r.MinEx && s == r.Min)
}

func (r ScoreRange) belowMax(s float64) bool {
	return s < r.Max || (!r.MaxEx && s == r.Max)
}

// scoreAt is the score of the item of rank i.
func (z *ZSet) scoreAt(i int, offs []int) float64 {
	if z.tree == nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(z.small[offs[i]:]))
	}
	at, _ := z.tree.GetAt(i)
	return at.Score
}

// offsets is smallOffsets for a small set, nil for a big one.
func (z *ZSet) offsets(buf *[maxPackedEntries + 1]int) []int {
	if z.tree == nil {
		return z.smallOffsets(buf)
	}
	return nil
}

// rangeRanks is the rank of the first item at or above r's minimum and
// the first past its maximum.
func (z *ZSet) rangeRanks(r ScoreRange) (first, end int) {
	var buf [maxPackedEntries + 1]int
	offs := z.offsets(&buf)
	lo, hi := 0, z.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if !r.aboveMin(z.scoreAt(mid, offs)) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	first = lo
	for hi = z.Len(); lo < hi; {
		mid := int(uint(lo+hi) >> 1)
		if r.belowMax(z.scoreAt(mid, offs)) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return first, lo
}

// CountRange counts the members whose scores are in r.
func (z *ZSet) CountRange(r ScoreRange) int {
	first, end := z.rangeRanks(r)
	return end - first
}

// AscendRange calls fn for the items with scores in r, in ascending order
// (descending with rev), until it returns false. fn must not change the
// set.
func (z *ZSet) AscendRange(r ScoreRange, rev bool, fn func(it ZItem) bool) {
	first, end := z.rangeRanks(r)
	if first >= end {
		return
	}
	if !rev {
		z.Scan(first, false, func(it ZItem) bool {
			return r.belowMax(it.Score) && fn(it)
		})
		return
	}
	z.Scan(z.Len()-end, true, func(it ZItem) bool {
		return r.aboveMin(it.Score) && fn(it)
	})
}

// Scan calls fn for every item in ascending order (descending with rev)
// from rank from until it returns false.
func (z *ZSet) Scan(from int, rev bool, fn func(it ZItem) bool) {
	n := z.Len()
	if from >= n || from < 0 {
		return
	}
	if z.tree == nil {
		var buf [maxPackedEntries + 1]int
		offs := z.smallOffsets(&buf)
		for i := from; i < n; i++ {
			at := i
			if rev {
				at = n - 1 - i
			}
			s, m, _ := z.smallAt(offs[at])
			if !fn(ZItem{s, string(m)}) {
				return
			}
		}
		return
	}
	iter := z.tree.Iter()
	defer iter.Release()
	if rev {
		at, _ := z.tree.GetAt(n - 1 - from)
		for ok := iter.Seek(at); ok; ok = iter.Prev() {
			if !fn(iter.Item()) {
				return
			}
		}
		return
	}
	at, _ := z.tree.GetAt(from)
	for ok := iter.Seek(at); ok; ok = iter.Next() {
		if !fn(iter.Item()) {
			return
		}
	}
}

// RemoveRange removes the items with scores in r and returns how many.
func (z *ZSet) RemoveRange(r ScoreRange) int {
	first, end := z.rangeRanks(r)
	if first >= end {
		return 0
	}
	return z.RemoveRanks(first, end-1)
}

// RemoveRanks removes the items of ranks start to stop (0-based,
// inclusive, within the set) and returns how many.
func (z *ZSet) RemoveRanks(start, stop int) int {
	if start < 0 || stop < start || start >= z.Len() {
		return 0
	}
	stop = min(stop, z.Len()-1)
	if z.tree == nil {
		var buf [maxPackedEntries + 1]int
		offs := z.smallOffsets(&buf)
		z.small = splice(z.small, offs[start], offs[stop+1], nil)
		z.n -= stop - start + 1
		return stop - start + 1
	}
	n := 0
	for i := start; i <= stop; i++ {
		it, ok := z.tree.GetAt(start)
		if !ok {
			break
		}
		z.removeItem(it)
		n++
	}
	return n
}

// PopMin removes and returns the item of lowest score.
func (z *ZSet) PopMin() (ZItem, bool) {
	if z.Len() == 0 {
		return ZItem{}, false
	}
	it := z.At(0)
	z.RemoveRanks(0, 0)
	return it, true
}

// PopMax removes and returns the item of highest score.
func (z *ZSet) PopMax() (ZItem, bool) {
	n := z.Len()
	if n == 0 {
		return ZItem{}, false
	}
	it := z.At(n - 1)
	z.RemoveRanks(n-1, n-1)
	return it, true
}

// unpack moves a small set into the tree and the map, for good.
func (z *ZSet) unpack() {
	z.tree = btree.NewBTreeGOptions(zless, btree.Options{NoLocks: true, Degree: zsetDegree})
	z.scores = make(map[string]float64, z.n+1)
	z.bytes = 0
	for off := 0; off < len(z.small); {
		s, m, next := z.smallAt(off)
		it := ZItem{s, string(m)}
		z.tree.Load(it)
		z.scores[it.Member] = s
		z.bytes += itemBytes(it.Member)
		off = next
	}
	z.small, z.n = nil, 0
}

// extBytes is the set's memory: itself and its items' bytes while small;
// itself, its tree (items and node headers) and its map once big.
func (z *ZSet) extBytes() int64 {
	n := int64(unsafe.Sizeof(*z))
	if z.tree == nil {
		return n + int64(cap(z.small))
	}
	n += 64 + z.bytes                          // the tree's header
	n += int64(z.tree.Len()/zsetDegree+1) * 48 // its nodes' headers, about
	return n + 48
}

func (z *ZSet) cloneExt() any {
	c := &ZSet{n: z.n, bytes: z.bytes}
	if z.tree == nil {
		c.small = append([]byte(nil), z.small...)
		return c
	}
	c.tree = btree.NewBTreeGOptions(zless, btree.Options{NoLocks: true, Degree: zsetDegree})
	z.tree.Scan(func(it ZItem) bool {
		c.tree.Load(it)
		return true
	})
	c.scores = make(map[string]float64, len(z.scores))
	for k, v := range z.scores {
		c.scores[k] = v
	}
	return c
}

// zsetExt serialises a sorted set as its member count, then, in order,
// each score's IEEE 754 bits (8 bytes, little-endian) and member behind
// its uvarint length.
var zsetExt = ExtCodec{
	Append: func(b []byte, e *Entry) ([]byte, error) {
		z, ok := e.Ext.(*ZSet)
		if !ok {
			return nil, errors.New("zset ext is not *ZSet")
		}
		b = binary.AppendUvarint(b, uint64(z.Len()))
		z.Scan(0, false, func(it ZItem) bool {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(it.Score))
			b = binary.AppendUvarint(b, uint64(len(it.Member)))
			b = append(b, it.Member...)
			return true
		})
		return b, nil
	},
	Decode: func(b []byte, e *Entry) error {
		n, b, err := readCount(b)
		if err != nil {
			return err
		}
		z := NewZSet()
		for i := 0; i < n; i++ {
			if len(b) < 8 {
				return errCollection
			}
			score := math.Float64frombits(binary.LittleEndian.Uint64(b))
			var m []byte
			if m, b, err = readBytes(b[8:]); err != nil {
				return err
			}
			if math.IsNaN(score) || !z.Set(score, m) {
				return errors.New("zset member repeated or scored NaN")
			}
		}
		if len(b) != 0 {
			return errors.New("bytes after a zset")
		}
		e.Ext = z
		return nil
	},
}
