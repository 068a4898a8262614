package replication

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/enginetest"
	"github.com/limitdb/limitdb/persistence"
)

func TestStreamContinuesOnlyWithinItsBacklog(t *testing.T) {
	s := NewStream(16 << 10)
	r, from := s.Tail(false)
	if from != 0 {
		t.Fatalf("a new stream's tail is at %d", from)
	}
	rec := persistence.AppendCommand(nil, persistence.VerbPing)
	for s.Offset() < 200<<10 {
		s.Append(rec)
		if _, err := r.Next(nil, 1<<20); err != nil { // keep the reader current
			t.Fatal(err)
		}
	}
	id, _, _ := s.IDs()
	end := s.Offset()
	if s.Continue(id, end+1) == nil {
		t.Error("a replica that read everything cannot continue")
	}
	if s.Continue(id, end-8<<10) == nil {
		t.Error("a replica 8 KiB behind, inside the backlog, cannot continue")
	}
	if s.Continue(id, 1) != nil {
		t.Error("a replica from offset 1 continues after the backlog dropped it")
	}
	if s.Continue("0000", end+1) != nil {
		t.Error("a replica of another history continues")
	}
	if s.Continue(id, end+2) != nil {
		t.Error("a replica ahead of the stream continues")
	}
}

func TestStreamShiftKeepsTheOldHistory(t *testing.T) {
	s := NewStream(1 << 20)
	s.Activate()
	s.Append(persistence.AppendCommand(nil, persistence.VerbPing))
	old, _, _ := s.IDs()
	at := s.Offset()
	s.Shift()
	s.Append(persistence.AppendCommand(nil, persistence.VerbPing))
	id, id2, off2 := s.IDs()
	if id == old || id2 != old || off2 != at+1 {
		t.Fatalf("after Shift: id %s id2 %s off2 %d; old %s at %d", id, id2, off2, old, at)
	}
	if s.Continue(old, at+1) == nil {
		t.Error("a sibling of the old history cannot continue")
	}
	if s.Continue(old, s.Offset()+1) != nil {
		t.Error("the old history continues past where it ended")
	}
}

func TestReaderFarBehindIsDropped(t *testing.T) {
	s := NewStream(16 << 10)
	s.maxLag = 64 << 10
	slow, _ := s.Tail(false)
	keep, _ := s.Tail(true)
	rec := bytes.Repeat([]byte("x"), 1000)
	for i := 0; i < 200; i++ {
		s.Append(rec)
	}
	if _, err := slow.Next(nil, 1<<20); !errors.Is(err, ErrLagging) {
		t.Errorf("a reader 200 KB behind with a 64 KB bound: %v, want ErrLagging", err)
	}
	got, err := keep.Next(nil, 1<<30)
	if err != nil || len(got) != 200*1000 {
		t.Errorf("the kept reader got %d bytes, %v; want every byte", len(got), err)
	}
}

// TestRecordsRoundTrip: what Record encodes, readRecord parses and the
// Applier stores, entry for entry, flushes and deletions included.
func TestRecordsRoundTrip(t *testing.T) {
	src, dst := engine.New(clock.NewFake(0), 4), engine.New(clock.NewFake(0), 4)
	s := NewStream(1 << 20)
	r, _ := s.Tail(false)
	src.SetJournal(s)
	const now = int64(1_700_000_000e9)
	src.SetString([]byte("gone"), now, []byte("x"), engine.SetOptions{}, nil)
	src.Exclusive(nil, true, func(tx *engine.Engine) { tx.Flush() })
	src.IncrBy([]byte("n"), now, 41)
	src.IncrBy([]byte("n"), now, 1)
	src.SetStrings([][]byte{[]byte("a"), []byte("b")}, [][]byte{[]byte("1"), []byte("2")}, now, false)
	src.SetString([]byte("del"), now, []byte("x"), engine.SetOptions{}, nil)
	src.Delete([]byte("del"), now)
	for _, k := range []string{"exp1", "exp2"} {
		src.SetString([]byte(k), now, []byte("x"), engine.SetOptions{Expire: now + 1}, nil)
	}
	src.SetString([]byte("later"), now, []byte("x"), engine.SetOptions{Expire: now + 10}, nil)
	if n := src.ExpireCycle(now+2, 20); n != 2 { // DROP records, applied at now: before they expire
		t.Fatalf("expiry deleted %d keys, want 2", n)
	}
	dst.SetString([]byte("stale"), now, []byte("x"), engine.SetOptions{}, nil) // the flush must remove it
	data, err := r.Next(nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ap := persistence.Applier{Eng: dst}
	br := bufioReader(data)
	var args [][]byte
	var raw []byte
	for br.Buffered() > 0 {
		if args, raw, err = persistence.ReadRecord(br, raw[:0], args[:0]); err != nil {
			t.Fatal(err)
		}
		if err := ap.Apply(now, args); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"n", "a", "b", "later"} {
		want, _ := src.Get([]byte(k), now)
		got, ok := dst.Get([]byte(k), now)
		wb, _ := want.AppendBinary(nil)
		gb, _ := got.AppendBinary(nil)
		if !ok || !bytes.Equal(gb, wb) {
			t.Errorf("key %s: got %+v, want %+v", k, got, want)
		}
	}
	for _, k := range []string{"gone", "del", "stale", "exp1", "exp2"} {
		if _, ok := dst.Get([]byte(k), now); ok {
			t.Errorf("key %s survived", k)
		}
	}
}

// Records of every size, across the chunks' boundaries and larger than a
// chunk, read back byte for byte, through Next and through NextView.
func TestStreamReadsBackWhatItWasGiven(t *testing.T) {
	s := NewStream(16 << 10)
	copier, _ := s.Tail(true)
	viewer, _ := s.Tail(true)
	var want, got, viewed []byte
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		n := rng.Intn(200)
		if i%500 == 7 {
			n = 3*chunkSize + 11
		}
		rec := make([]byte, n)
		rng.Read(rec)
		s.Append(rec)
		want = append(want, rec...)
		if i%10 == 0 {
			b, err := copier.Next(nil, math.MaxInt) // as the append-only file's writer reads
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b...)
			for {
				b, err := viewer.NextView(rng.Intn(5000) + 1)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) == 0 {
					break
				}
				viewed = append(viewed, b...)
			}
		}
	}
	got, _ = copier.Next(got, 1<<30)
	for b, _ := viewer.NextView(1 << 30); len(b) > 0; b, _ = viewer.NextView(1 << 30) {
		viewed = append(viewed, b...)
	}
	if !bytes.Equal(got, want) || !bytes.Equal(viewed, want) {
		t.Fatalf("read back %d bytes by copy and %d by view, want the %d given", len(got), len(viewed), len(want))
	}
	if s.Offset() != int64(len(want)) {
		t.Errorf("offset %d, want %d", s.Offset(), len(want))
	}
}

// A view stays what it was until its reader calls again, while the stream
// grows past it and drops its chunk; the chunks nobody's view is in are
// reused.
func TestStreamViewOutlivesTrim(t *testing.T) {
	s := NewStream(16 << 10)
	s.maxLag = 64 << 10
	holder, _ := s.Tail(false) // falls behind, keeps its view
	mover, _ := s.Tail(false)
	s.Append(bytes.Repeat([]byte("a"), 1000))
	view, err := holder.NextView(1 << 20)
	if err != nil || len(view) != 1000 {
		t.Fatalf("view of %d bytes, %v", len(view), err)
	}
	arrays := map[*byte]bool{} // the chunks' memory
	for i := 0; i < 100; i++ {
		s.Append(bytes.Repeat([]byte("b"), 10_000))
		if _, err := mover.Next(nil, 1<<30); err != nil {
			t.Fatal(err)
		}
		for _, c := range s.chunks {
			arrays[&c[:1][0]] = true
		}
	}
	if b := s.Backlog(); b.FirstByteOffset <= 1000 {
		t.Fatalf("the stream kept its first bytes (first byte offset %d): the test proves nothing", b.FirstByteOffset)
	}
	if string(view) != string(bytes.Repeat([]byte("a"), 1000)) {
		t.Error("the view changed once the stream moved on")
	}
	if len(arrays) > 4 { // a megabyte went through 16 KiB of backlog
		t.Errorf("the stream's chunks took %d arrays: dropped ones are not reused", len(arrays))
	}
	if _, err := holder.NextView(1 << 20); !errors.Is(err, ErrLagging) {
		t.Errorf("the holder, far behind: %v, want ErrLagging", err)
	}
}

// chunkReader returns its bytes a few at a time, as a socket might.
type chunkReader struct {
	b   []byte
	rng *rand.Rand
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+r.rng.Intn(300))], r.b)
	r.b = r.b[n:]
	return n, nil
}

// The link applies the stream however the socket splits it and whatever
// its buffer holds of a record: the replica ends with the primary's
// keyspace and the stream's bytes, at its offsets.
func TestLinkAppliesRecordsAcrossReads(t *testing.T) {
	const now = int64(1_700_000_000e9)
	src := engine.New(clock.NewFake(0), 4)
	s := NewStream(1 << 20)
	r, _ := s.Tail(true)
	src.SetJournal(s)
	for i := 0; i < 200; i++ {
		key := []byte(fmt.Sprint("k", i%50))
		switch i % 4 {
		case 0:
			src.SetString(key, now, bytes.Repeat([]byte("v"), i*10), engine.SetOptions{}, nil) // up to 2 KB: larger than a small buffer
		case 1:
			src.IncrBy(append([]byte("n"), key...), now, 1)
		case 2:
			src.SetString(append([]byte("e"), key...), now, []byte("x"), engine.SetOptions{Expire: now + 1}, nil)
		case 3:
			src.ExpireCycle(now+2, 20)
		}
	}
	data, err := r.Next(nil, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{16, 4096, 256 << 10} {
		t.Run(fmt.Sprint("buffer ", size), func(t *testing.T) {
			dst := engine.New(clock.NewFake(now), 2) // applies at the primary's instant
			m := New(dst, log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
			m.stream.Activate()
			l := newLink(m, "127.0.0.1", 6379)
			br := bufio.NewReaderSize(&chunkReader{b: data, rng: rand.New(rand.NewSource(int64(size)))}, size)
			if err := l.apply(br, func() {}); err == nil || !strings.Contains(err.Error(), "closed") {
				t.Fatalf("apply ended with %v, want the primary closing", err)
			}
			if m.stream.Offset() != int64(len(data)) {
				t.Errorf("the replica's stream is at %d, want %d", m.stream.Offset(), len(data))
			}
			want, got := enginetest.Keyspace(t, src, now), enginetest.Keyspace(t, dst, now)
			if len(want) == 0 || len(got) != len(want) {
				t.Fatalf("the replica has %d keys, the primary %d", len(got), len(want))
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("key %q differs", k)
				}
			}
		})
	}
}

// Next's max bounds the bytes it appends, whatever dst holds already.
func TestNextAppendsUpToMax(t *testing.T) {
	s := NewStream(16 << 10)
	r, _ := s.Tail(false)
	s.Append([]byte("0123456789"))
	got, err := r.Next([]byte("held"), 4)
	if err != nil || string(got) != "held0123" {
		t.Fatalf("Next(held, 4) = %q, %v; want held0123", got, err)
	}
	if got, _ = r.Next(got[:0], 100); string(got) != "456789" {
		t.Errorf("then %q, want 456789", got)
	}
}

func bufioReader(b []byte) *bufio.Reader {
	r := bufio.NewReaderSize(bytes.NewReader(b), 64<<10)
	r.Peek(1)
	return r
}
