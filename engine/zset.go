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
// The order lives in a B-tree of (score, member) that counts its items, so
// a rank is found in O(log² n) (GetAt bisected) and a range walks only
// what it returns. A member's score is found by a scan of the tree while
// the set is small (at most 128 members of at most 64 bytes: Redis's
// listpack, which it scans too), and through a member → score map once it
// is not ("skiplist"), for good.
type ZSet struct {
	tree   *btree.BTreeG[ZItem]
	scores map[string]float64 // once big
	bytes  int64              // the items' accounted memory
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

// zsetDegree keeps a small set's tree one node of a few dozen items.
const zsetDegree = 16

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet {
	return &ZSet{tree: btree.NewBTreeGOptions(zless, btree.Options{NoLocks: true, Degree: zsetDegree})}
}

// Len is the number of members.
func (z *ZSet) Len() int { return z.tree.Len() }

// Encoding is what OBJECT ENCODING answers: listpack or skiplist.
func (z *ZSet) Encoding() string {
	if z.scores != nil {
		return "skiplist"
	}
	return "listpack"
}

// itemBytes is one member's accounted memory: its item in the tree, and
// its entry in the map once there is one.
func (z *ZSet) itemBytes(member string) int64 {
	n := int64(unsafe.Sizeof(ZItem{})) + int64(len(member))
	if z.scores != nil {
		n += 16 + 8 + mapEntryBytes
	}
	return n
}

// Score returns member's score.
func (z *ZSet) Score(member []byte) (float64, bool) {
	if z.scores != nil {
		s, ok := z.scores[string(member)]
		return s, ok
	}
	var score float64
	found := false
	z.tree.Scan(func(it ZItem) bool {
		if it.Member == string(member) {
			score, found = it.Score, true
		}
		return !found
	})
	return score, found
}

// Set gives member the score (not NaN), adding it if new; it reports
// whether the member is new. A score of -0 is kept as 0, as Redis keeps it.
func (z *ZSet) Set(score float64, member []byte) (added bool) {
	if score == 0 {
		score = 0
	}
	old, ok := z.Score(member)
	if ok {
		if old == score {
			return false
		}
		it, _ := z.tree.Delete(ZItem{old, string(member)})
		it.Score = score
		z.tree.Set(it) // the member's string is reused
		if z.scores != nil {
			z.scores[it.Member] = score
		}
		return false
	}
	if z.scores == nil && (len(member) > maxPackedValue || z.tree.Len()+1 > maxPackedEntries) {
		z.unpack()
	}
	m := string(member)
	z.tree.Set(ZItem{score, m})
	if z.scores != nil {
		z.scores[m] = score
	}
	z.bytes += z.itemBytes(m)
	return true
}

// Remove removes member and reports whether it was there.
func (z *ZSet) Remove(member []byte) bool {
	score, ok := z.Score(member)
	if !ok {
		return false
	}
	z.removeItem(ZItem{score, string(member)})
	return true
}

func (z *ZSet) removeItem(it ZItem) {
	z.tree.Delete(it)
	z.bytes -= z.itemBytes(it.Member)
	if z.scores != nil {
		delete(z.scores, it.Member)
	}
}

// Rank is member's 0-based rank in ascending order.
func (z *ZSet) Rank(member []byte) (int, bool) {
	score, ok := z.Score(member)
	if !ok {
		return 0, false
	}
	return z.countBelow(ZItem{score, string(member)}), true
}

// countBelow is the number of items ordered before it.
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

// At is the item at 0-based ascending rank i.
func (z *ZSet) At(i int) ZItem {
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

// firstInRange is the rank of the first item at or above r's minimum.
func (z *ZSet) firstInRange(r ScoreRange) int {
	lo, hi := 0, z.tree.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if at, _ := z.tree.GetAt(mid); !r.aboveMin(at.Score) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// CountRange counts the members whose scores are in r.
func (z *ZSet) CountRange(r ScoreRange) int {
	first := z.firstInRange(r)
	// The first rank past the maximum: bisect from first.
	lo, hi := first, z.tree.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if at, _ := z.tree.GetAt(mid); r.belowMax(at.Score) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - first
}

// AscendRange calls fn for the items with scores in r, in ascending order
// (descending with rev), until it returns false. fn must not change the
// set.
func (z *ZSet) AscendRange(r ScoreRange, rev bool, fn func(it ZItem) bool) {
	if !rev {
		z.Scan(z.firstInRange(r), false, func(it ZItem) bool {
			return r.belowMax(it.Score) && fn(it)
		})
		return
	}
	last := z.firstInRange(r) + z.CountRange(r) - 1
	z.Scan(z.Len()-1-last, true, func(it ZItem) bool {
		return r.aboveMin(it.Score) && fn(it)
	})
}

// Scan calls fn for every item in ascending order (descending with rev)
// from rank from until it returns false.
func (z *ZSet) Scan(from int, rev bool, fn func(it ZItem) bool) {
	n := z.tree.Len()
	if from >= n || from < 0 {
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
	var gone []ZItem
	z.AscendRange(r, false, func(it ZItem) bool {
		gone = append(gone, it)
		return true
	})
	for _, it := range gone {
		z.removeItem(it)
	}
	return len(gone)
}

// RemoveRanks removes the items of ranks start to stop (0-based,
// inclusive, within the set) and returns how many.
func (z *ZSet) RemoveRanks(start, stop int) int {
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
	it, ok := z.tree.Min()
	if ok {
		z.removeItem(it)
	}
	return it, ok
}

// PopMax removes and returns the item of highest score.
func (z *ZSet) PopMax() (ZItem, bool) {
	it, ok := z.tree.Max()
	if ok {
		z.removeItem(it)
	}
	return it, ok
}

func (z *ZSet) unpack() {
	z.scores = make(map[string]float64, z.tree.Len()+1)
	z.bytes = 0
	z.tree.Scan(func(it ZItem) bool {
		z.scores[it.Member] = it.Score
		z.bytes += z.itemBytes(it.Member)
		return true
	})
}

// extBytes is the set's memory: itself, its tree (items and node
// headers) and its map.
func (z *ZSet) extBytes() int64 {
	n := int64(unsafe.Sizeof(*z)) + 64 + z.bytes // the tree's header
	n += int64(z.tree.Len()/zsetDegree+1) * 48   // its nodes' headers, about
	if z.scores != nil {
		n += 48
	}
	return n
}

func (z *ZSet) cloneExt() any {
	c := NewZSet()
	z.tree.Scan(func(it ZItem) bool {
		c.tree.Load(it)
		return true
	})
	c.bytes = z.bytes
	if z.scores != nil {
		c.scores = make(map[string]float64, len(z.scores))
		for k, v := range z.scores {
			c.scores[k] = v
		}
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
		z.tree.Scan(func(it ZItem) bool {
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
