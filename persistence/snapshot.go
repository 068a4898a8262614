package persistence

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/limitdb/limitdb/engine"
)

const (
	magic   = "LIMITDB\x00"
	version = 1

	headerLen  = len(magic) + 4 + 8
	recKey     = 'K'
	recSection = 'S'
	recEnd     = 'E'
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SaveStats describes one written snapshot.
type SaveStats struct {
	Keys     int           // entries written
	Sections int           // named sections written
	Bytes    int64         // file size
	Started  time.Time     // wall-clock start of the save
	Duration time.Duration // time to write, sync and rename
	// MaxShardHold is the longest one shard's copy took (lock wait
	// included): the longest a client touching that shard could have
	// waited because of the save.
	MaxShardHold time.Duration
	// MeanShardHold is the average over shards of the same.
	MeanShardHold time.Duration
}

// Save writes every live entry of eng at the engine's current time, and
// every registered section, to path: through path+".tmp", fsynced, renamed
// over path, directory fsynced. It locks one shard at a time (see doc.go).
func Save(path string, eng *engine.Engine, sections *Sections) (SaveStats, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return SaveStats{}, fmt.Errorf("snapshot: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 256<<10)
	st, err := Write(bw, eng, sections)
	if err != nil {
		return st, err
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("snapshot: writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return st, fmt.Errorf("snapshot: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return st, fmt.Errorf("snapshot: closing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return st, fmt.Errorf("snapshot: %w", err)
	}
	ok = true
	if err := syncDir(filepath.Dir(path)); err != nil {
		return st, fmt.Errorf("snapshot: fsync directory: %w", err)
	}
	return st, nil
}

// Write encodes a snapshot of eng and sections to w, in the file format of
// doc.go: what Save writes to a file, and what a primary sends a replica
// on a full resynchronisation. An error of w is returned wrapped, with the
// "snapshot: " prefix.
func Write(dst io.Writer, eng *engine.Engine, sections *Sections) (SaveStats, error) {
	clk := eng.Clock()
	start := clk.Mono()
	now := eng.Now()
	st := SaveStats{Started: time.Unix(0, now)}
	crc := crc32.New(castagnoli)
	w := &countWriter{w: dst, crc: crc}

	hdr := make([]byte, 0, headerLen)
	hdr = append(hdr, magic...)
	hdr = binary.LittleEndian.AppendUint32(hdr, version)
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(now))
	w.Write(hdr)

	secs := sections.sorted()
	early := make([][]byte, len(secs))
	for i, sec := range secs {
		if sec.early {
			data, err := sec.save()
			if err != nil {
				return st, fmt.Errorf("snapshot: section %s: %w", sec.name, err)
			}
			early[i] = data
		}
	}

	// Copy each shard's entries under its lock and encode them with none
	// held. Entries with Ext state are encoded under the lock, because an
	// algorithm may change its Ext state in place once the lock is free.
	var buf, scratch, keys []byte
	type plain struct {
		keyEnd int
		ent    engine.Entry
	}
	var plains []plain
	record := func(key []byte, ent *engine.Entry) error {
		var err error
		if scratch, err = ent.AppendBinary(scratch[:0]); err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
		buf = append(buf, recKey)
		buf = binary.AppendUvarint(buf, uint64(len(key)))
		buf = append(buf, key...)
		buf = binary.AppendUvarint(buf, uint64(len(scratch)))
		buf = append(buf, scratch...)
		st.Keys++
		return nil
	}
	for i := 0; i < eng.Shards(); i++ {
		buf, keys, plains = buf[:0], keys[:0], plains[:0]
		var encErr error
		held := clk.Mono()
		eng.RangeShardTransient(i, now, func(key string, ent *engine.Entry) bool {
			if ent.Ext != nil {
				encErr = record([]byte(key), ent)
				return encErr == nil
			}
			keys = append(keys, key...)
			plains = append(plains, plain{len(keys), *ent})
			return true
		})
		h := clk.Mono() - held
		st.MaxShardHold = max(st.MaxShardHold, h)
		st.MeanShardHold += h / time.Duration(eng.Shards())
		if encErr != nil {
			return st, fmt.Errorf("snapshot: %w", encErr)
		}
		start := 0
		for k := range plains {
			if err := record(keys[start:plains[k].keyEnd], &plains[k].ent); err != nil {
				return st, fmt.Errorf("snapshot: %w", err)
			}
			start = plains[k].keyEnd
		}
		w.Write(buf)
		if w.err != nil {
			return st, fmt.Errorf("snapshot: %w", w.err)
		}
		runtime.Gosched() // serving goroutines first: the save can wait
	}
	for i, sec := range secs {
		data := early[i]
		if !sec.early {
			var err error
			if data, err = sec.save(); err != nil {
				return st, fmt.Errorf("snapshot: section %s: %w", sec.name, err)
			}
		}
		buf = buf[:0]
		buf = append(buf, recSection)
		buf = binary.AppendUvarint(buf, uint64(len(sec.name)))
		buf = append(buf, sec.name...)
		buf = binary.AppendUvarint(buf, uint64(len(data)))
		w.Write(buf)
		w.Write(data)
		st.Sections++
	}
	buf = append(buf[:0], recEnd)
	buf = binary.AppendUvarint(buf, uint64(st.Keys))
	buf = binary.AppendUvarint(buf, uint64(st.Sections))
	w.Write(buf)
	w.crc = nil
	w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	if w.err != nil {
		return st, fmt.Errorf("snapshot: %w", w.err)
	}
	st.Bytes = w.n
	st.Duration = clk.Mono() - start
	return st, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// countWriter writes through a buffer, hashing and counting, and keeps the
// first error so the writing code reads straight.
type countWriter struct {
	w   io.Writer
	crc hash.Hash32
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) {
	if c.err != nil {
		return
	}
	if c.crc != nil {
		c.crc.Write(p)
	}
	_, c.err = c.w.Write(p)
	c.n += int64(len(p))
}

// LoadStats describes one loaded snapshot.
type LoadStats struct {
	Keys            int      // entries restored
	Expired         int      // entries skipped because they expired while stopped
	Sections        int      // sections handed to their loaders
	UnknownSections []string // sections in the file that nobody registered
	Created         time.Time
	Duration        time.Duration
}

// ErrNotExist is returned (wrapped) by Load when there is no snapshot file.
var ErrNotExist = os.ErrNotExist

// Load verifies the snapshot at path and then restores it into eng at the
// engine's current time, calling registered section loaders. A missing
// file returns an error matching errors.Is(err, ErrNotExist). Any other
// problem returns an error prefixed "snapshot: " and, because the whole
// file is verified first, leaves eng and the sections untouched; except
// keys that do not fit eng's shards (an error matching engine.ErrShardFull),
// found only while storing them.
func Load(path string, eng *engine.Engine, sections *Sections) (LoadStats, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return LoadStats{}, err
		}
		return LoadStats{}, fmt.Errorf("snapshot: %w", err)
	}
	return LoadBytes(data, eng, sections)
}

// LoadBytes is Load of a snapshot already in memory: a file's contents.
func LoadBytes(data []byte, eng *engine.Engine, sections *Sections) (LoadStats, error) {
	snap, err := Decode(data, eng.Now())
	if err != nil {
		return LoadStats{}, err
	}
	return snap.Restore(eng, sections, false)
}

// Decoded is a snapshot verified whole and decoded, not yet restored: what
// a replica holds of its primary's snapshot before it replaces anything.
type Decoded struct {
	recs    records
	created int64
	data    []byte // the image the records are slices of
}

// Decode verifies a whole snapshot image and decodes it, every entry
// checked (DecodeEntry), without touching any keyspace: the checksum, the
// trailer's counts, each entry's structure, and that no limiter's state
// reaches past what any limit can span from now. The records alias data.
func Decode(data []byte, now int64) (*Decoded, error) {
	recs, created, err := verify(data)
	if err != nil {
		return nil, err
	}
	for _, r := range recs.keys {
		if r.ent.Kind.Limiter() && r.ent.Live(now) && r.ent.Expire-now > maxLimiterSpan {
			return nil, fmt.Errorf("snapshot: key %q: a %v state fresh again only in %d years: no limit spans that long; the file is corrupt",
				r.key, r.ent.Kind, (r.ent.Expire-now)/(365*24*int64(time.Hour)))
		}
	}
	return &Decoded{recs: recs, created: created, data: data}, nil
}

// Keys is the number of keys the snapshot holds, expired ones included.
func (d *Decoded) Keys() int { return len(d.recs.keys) }

// Restore stores the snapshot's live keys in eng at the engine's current
// time, after emptying it when flush is set (a replica's full
// resynchronisation), then hands its sections to their loaders. What can
// still fail here is what a decoded snapshot cannot know: keys that do not
// fit eng's shards (engine.ErrShardFull) and a section its loader refuses.
func (d *Decoded) Restore(eng *engine.Engine, sections *Sections, flush bool) (LoadStats, error) {
	start := eng.Clock().Mono()
	st := LoadStats{Created: time.Unix(0, d.created)}
	if flush {
		eng.Flush()
	}
	if err := restore(eng, d.recs.keys, &st); err != nil {
		return st, err
	}
	for _, s := range d.recs.sections {
		sec, ok := sections.lookup(s.name)
		if !ok {
			st.UnknownSections = append(st.UnknownSections, s.name)
			continue
		}
		if err := sec.load(s.data); err != nil {
			return st, fmt.Errorf("snapshot: section %s: %w", s.name, err)
		}
		st.Sections++
	}
	st.Duration = eng.Clock().Mono() - start
	return st, nil
}

// restore stores the snapshot's live keys in eng. Keys that do not fit,
// because a shard of eng is full (a snapshot of a server with more shards,
// loaded into one with fewer), are an error wrapping engine.ErrShardFull,
// not a crash; eng then holds the keys before it.
// maxLimiterSpan is the longest a limiter's state can stay before it is
// fresh again: every algorithm refuses parameters past 2^62 ns (about 146
// years; engine/bucket's maxFill, and less for the others). A loaded state
// beyond it was not written by limitdb.
const maxLimiterSpan = 1 << 62

func restore(eng *engine.Engine, keys []keyRec, st *LoadStats) (err error) {
	defer func() {
		if r := recover(); r != nil {
			full, ok := r.(error)
			if !ok || !errors.Is(full, engine.ErrShardFull) {
				panic(r)
			}
			err = fmt.Errorf("snapshot: %w: %d keys fitted in this server's %d shards; start it with more (--shards)",
				full, st.Keys, eng.Shards())
		}
	}()
	now := eng.Now()
	for _, r := range keys {
		if !r.ent.Live(now) {
			st.Expired++
			continue
		}
		ent := r.ent
		eng.Do(r.key, now, func(engine.Entry) (engine.Entry, bool) { return ent, true })
		st.Keys++
	}
	return nil
}

type keyRec struct {
	key []byte
	ent engine.Entry
}

type sectionRec struct {
	name string
	data []byte
}

type records struct {
	keys     []keyRec
	sections []sectionRec
}

// verify checks a whole snapshot image and decodes it without applying
// anything; it returns the records and the header's creation time.
func verify(data []byte) (records, int64, error) {
	var recs records
	if len(data) < headerLen+1+4 {
		if len(data) >= len(magic) && string(data[:len(magic)]) != magic {
			return recs, 0, errors.New("snapshot: not a limitdb snapshot (bad magic)")
		}
		return recs, 0, fmt.Errorf("snapshot: truncated: %d bytes is shorter than an empty snapshot", len(data))
	}
	if string(data[:len(magic)]) != magic {
		return recs, 0, errors.New("snapshot: not a limitdb snapshot (bad magic)")
	}
	if v := binary.LittleEndian.Uint32(data[len(magic):]); v != version {
		return recs, 0, fmt.Errorf("snapshot: unsupported version %d (this build reads %d)", v, version)
	}
	created := int64(binary.LittleEndian.Uint64(data[len(magic)+4:]))
	body := data[:len(data)-4]
	want := binary.LittleEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, castagnoli); got != want {
		return recs, 0, fmt.Errorf("snapshot: crc mismatch (file says %08x, content hashes to %08x): truncated or corrupt", want, got)
	}
	off := headerLen
	next := func(what string) ([]byte, error) {
		l, n := binary.Uvarint(body[off:])
		if n <= 0 || l > uint64(len(body)-off-n) {
			return nil, fmt.Errorf("snapshot: bad %s length at offset %d", what, off)
		}
		off += n
		b := body[off : off+int(l)]
		off += int(l)
		return b, nil
	}
	for {
		if off >= len(body) {
			return recs, 0, errors.New("snapshot: truncated: no end record")
		}
		tag := body[off]
		off++
		switch tag {
		case recKey:
			key, err := next("key")
			if err != nil {
				return recs, 0, err
			}
			eb, err := next("entry")
			if err != nil {
				return recs, 0, err
			}
			ent, err := DecodeEntry(eb)
			if err != nil {
				return recs, 0, fmt.Errorf("snapshot: key %q: %w", key, err)
			}
			recs.keys = append(recs.keys, keyRec{key, ent})
		case recSection:
			name, err := next("section name")
			if err != nil {
				return recs, 0, err
			}
			d, err := next("section")
			if err != nil {
				return recs, 0, err
			}
			recs.sections = append(recs.sections, sectionRec{string(name), d})
		case recEnd:
			keys, n := binary.Uvarint(body[off:])
			if n <= 0 {
				return recs, 0, errors.New("snapshot: bad end record")
			}
			off += n
			secs, n := binary.Uvarint(body[off:])
			if n <= 0 {
				return recs, 0, errors.New("snapshot: bad end record")
			}
			off += n
			if keys != uint64(len(recs.keys)) || secs != uint64(len(recs.sections)) {
				return recs, 0, fmt.Errorf("snapshot: end record counts %d keys and %d sections, file holds %d and %d",
					keys, secs, len(recs.keys), len(recs.sections))
			}
			if off != len(body) {
				return recs, 0, fmt.Errorf("snapshot: %d stray bytes after the end record", len(body)-off)
			}
			return recs, created, nil
		default:
			return recs, 0, fmt.Errorf("snapshot: unknown record type 0x%02x at offset %d", tag, off-1)
		}
	}
}
