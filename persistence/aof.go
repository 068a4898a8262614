package persistence

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/limitdb/limitdb/engine"
)

// The append-only file is Redis 7's multi-part layout (doc.go, "Append-only
// file"): a directory holding a manifest, one base file (a snapshot) and the
// incremental files that follow it, each a run of change-stream records.

// AOF is an open append-only directory. Append, Sync and Rotate come from
// one writer; BeginRewrite/FinishRewrite from one rewrite at a time; Stats
// from anyone.
type AOF struct {
	dir, name string

	mu       sync.Mutex
	base     aofFile   // zero name: no base yet
	incrs    []aofFile // oldest first; the last is the one appended to
	f        *os.File  // the last incr file, open for appending
	incrSize int64     // bytes in every listed incr file
	baseSize int64
}

// aofFile is one line of the manifest.
type aofFile struct {
	name string
	seq  int64
	typ  byte // 'b' base, 'i' incremental
}

// AOFStats is what INFO persistence reports of the files.
type AOFStats struct {
	BaseSize    int64 // aof_base_size
	CurrentSize int64 // aof_current_size: base and incr files together
	Files       int
}

// OpenAOF opens the append-only directory dir for files named name (the
// appendfilename), creating the directory if need be. Its manifest, if
// any, is read and checked; nothing is loaded (Load) or written (Rotate)
// yet.
func OpenAOF(dir, name string) (*AOF, error) {
	if name == "" || strings.ContainsAny(name, "/\\ \n") {
		return nil, fmt.Errorf("aof: bad file name %q", name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("aof: %w", err)
	}
	a := &AOF{dir: dir, name: name}
	data, err := os.ReadFile(a.manifestPath())
	if errors.Is(err, os.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return nil, fmt.Errorf("aof: %w", err)
	}
	if err := a.parseManifest(data); err != nil {
		return nil, err
	}
	for _, f := range a.files() {
		fi, err := os.Stat(a.path(f.name))
		if err != nil {
			return nil, fmt.Errorf("aof: the manifest lists %s: %w", f.name, err)
		}
		if f.typ == 'b' {
			a.baseSize = fi.Size()
		} else {
			a.incrSize += fi.Size()
		}
	}
	return a, nil
}

// Exists reports whether the directory had a manifest: there is something
// to load.
func (a *AOF) Exists() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.base.name != "" || len(a.incrs) > 0
}

func (a *AOF) manifestPath() string    { return a.path(a.name + ".manifest") }
func (a *AOF) path(file string) string { return filepath.Join(a.dir, file) }
func (a *AOF) baseName(seq int64) string {
	return a.name + "." + strconv.FormatInt(seq, 10) + ".base.ldb"
}
func (a *AOF) incrName(seq int64) string {
	return a.name + "." + strconv.FormatInt(seq, 10) + ".incr.aof"
}

// files is the base then the incrs. The caller holds mu, or owns a.
func (a *AOF) files() []aofFile {
	var out []aofFile
	if a.base.name != "" {
		out = append(out, a.base)
	}
	return append(out, a.incrs...)
}

// parseManifest reads "file <name> seq <n> type <b|i>" lines, in any key
// order, as Redis writes them.
func (a *AOF) parseManifest(data []byte) error {
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		if len(fields)%2 != 0 {
			return fmt.Errorf("aof: manifest line %d: %q: not key value pairs", i+1, line)
		}
		var f aofFile
		for j := 0; j < len(fields); j += 2 {
			k, v := fields[j], fields[j+1]
			switch k {
			case "file":
				if strings.ContainsAny(v, "/\\") {
					return fmt.Errorf("aof: manifest line %d: file %q is not in the directory", i+1, v)
				}
				f.name = v
			case "seq":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 1 {
					return fmt.Errorf("aof: manifest line %d: bad seq %q", i+1, v)
				}
				f.seq = n
			case "type":
				if v != "b" && v != "i" {
					return fmt.Errorf("aof: manifest line %d: unknown type %q", i+1, v)
				}
				f.typ = v[0]
			} // unknown keys are skipped, as Redis does
		}
		if f.name == "" || f.seq == 0 || f.typ == 0 {
			return fmt.Errorf("aof: manifest line %d: %q lacks file, seq or type", i+1, line)
		}
		if f.typ == 'b' {
			if a.base.name != "" {
				return fmt.Errorf("aof: manifest line %d: a second base file", i+1)
			}
			a.base = f
			continue
		}
		if n := len(a.incrs); n > 0 && a.incrs[n-1].seq >= f.seq {
			return fmt.Errorf("aof: manifest line %d: incr seq %d after %d", i+1, f.seq, a.incrs[n-1].seq)
		}
		a.incrs = append(a.incrs, f)
	}
	if a.base.name == "" && len(a.incrs) == 0 {
		return fmt.Errorf("aof: the manifest lists no file")
	}
	return nil
}

// writeManifest replaces the manifest: through a temporary file, fsynced,
// renamed, directory fsynced. The caller holds mu.
func (a *AOF) writeManifest() error {
	var b strings.Builder
	for _, f := range a.files() {
		fmt.Fprintf(&b, "file %s seq %d type %c\n", f.name, f.seq, f.typ)
	}
	tmp := a.manifestPath() + ".tmp"
	if err := writeSynced(tmp, []byte(b.String())); err != nil {
		return fmt.Errorf("aof: manifest: %w", err)
	}
	if err := os.Rename(tmp, a.manifestPath()); err != nil {
		return fmt.Errorf("aof: manifest: %w", err)
	}
	if err := syncDir(a.dir); err != nil {
		return fmt.Errorf("aof: fsync directory: %w", err)
	}
	return nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// AOFLoadStats describes a load.
type AOFLoadStats struct {
	Base      LoadStats // the base file's snapshot
	Records   int64     // records applied from incr files
	Truncated int64     // bytes of a torn last record cut off (aof-load-truncated)
	Files     int
}

// Load restores the base file into eng and sections, then applies every
// record of the incr files, in order, with apply. A record that ends
// early at the very end of the last file (a crash in the middle of a
// write) is cut off when truncatedOK (aof-load-truncated yes), with the
// file truncated to its last whole record; anything else that does not
// parse, or that apply refuses, stops the load with an error naming the
// file and the byte offset of the record.
func (a *AOF) Load(eng *engine.Engine, sections *Sections, apply func(args [][]byte) error, truncatedOK bool) (AOFLoadStats, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var st AOFLoadStats
	if a.base.name != "" {
		bs, err := Load(a.path(a.base.name), eng, sections)
		if err != nil {
			return st, fmt.Errorf("aof: base file %s: %w", a.base.name, err)
		}
		st.Base = bs
		st.Files++
	}
	for i, f := range a.incrs {
		last := i == len(a.incrs)-1
		n, cut, err := a.loadIncr(f.name, apply, last && truncatedOK)
		st.Records += n
		st.Truncated += cut
		st.Files++
		if err != nil {
			return st, err
		}
		a.incrSize -= cut
	}
	return st, nil
}

// loadIncr applies one incr file; it reports records applied and bytes
// truncated.
func (a *AOF) loadIncr(name string, apply func(args [][]byte) error, truncateOK bool) (int64, int64, error) {
	path := a.path(name)
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("aof: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("aof: %w", err)
	}
	br := bufio.NewReaderSize(f, 1<<20)
	var (
		off, n int64
		raw    []byte
		args   [][]byte
	)
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return n, 0, nil
		}
		args, raw, err = ReadRecord(br, raw[:0], args[:0])
		if err != nil {
			torn := errors.Is(err, ErrTorn) || errors.Is(err, io.EOF)
			if torn && truncateOK {
				if err := os.Truncate(path, off); err != nil {
					return n, 0, fmt.Errorf("aof: truncating %s to %d: %w", name, off, err)
				}
				return n, fi.Size() - off, nil
			}
			if torn {
				return n, 0, fmt.Errorf("aof: %s ends inside the record at offset %d (a crash while writing; aof-load-truncated yes loads what comes before it)", name, off)
			}
			return n, 0, fmt.Errorf("aof: %s: bad record at offset %d: %w", name, off, err)
		}
		if err := apply(args); err != nil {
			return n, 0, fmt.Errorf("aof: %s: record at offset %d: %w", name, off, err)
		}
		off += int64(len(raw))
		n++
	}
}

// Rotate starts a new incr file and lists it in the manifest: the files
// from here on get what Append writes. It is how a new append-only file
// begins (nothing listed yet) and the first step of a rewrite: the base
// written next must reflect at least every record before the rotation.
// It returns the new file's seq.
func (a *AOF) Rotate() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	seq := int64(1)
	if n := len(a.incrs); n > 0 {
		seq = a.incrs[n-1].seq + 1
	}
	name := a.incrName(seq)
	f, err := os.OpenFile(a.path(name), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("aof: %w", err)
	}
	a.incrs = append(a.incrs, aofFile{name: name, seq: seq, typ: 'i'})
	if err := a.writeManifest(); err != nil {
		a.incrs = a.incrs[:len(a.incrs)-1]
		f.Close()
		os.Remove(a.path(name))
		return 0, err
	}
	if a.f != nil {
		if err := a.f.Sync(); err != nil {
			f.Close()
			return 0, fmt.Errorf("aof: fsync: %w", err)
		}
		a.f.Close()
	}
	a.f = f
	return seq, nil
}

// Reopen opens the last listed incr file for appending, after Load: a
// server that restarts goes on writing where it stopped. With no incr file
// listed it rotates.
func (a *AOF) Reopen() error {
	a.mu.Lock()
	if a.f != nil {
		a.mu.Unlock()
		return nil
	}
	n := len(a.incrs)
	if n == 0 {
		a.mu.Unlock()
		_, err := a.Rotate()
		return err
	}
	defer a.mu.Unlock()
	f, err := os.OpenFile(a.path(a.incrs[n-1].name), os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("aof: %w", err)
	}
	a.f = f
	return nil
}

// Append writes p, whole records, to the current incr file, and returns
// how many bytes it wrote: all of them, or fewer with an error (a full
// disk), in which case the rest must be appended again. It does not fsync
// (Sync).
func (a *AOF) Append(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return 0, fmt.Errorf("aof: no incr file open")
	}
	n, err := a.f.Write(p)
	a.incrSize += int64(n)
	if err != nil {
		return n, fmt.Errorf("aof: write: %w", err)
	}
	return n, nil
}

// Sync fsyncs the current incr file.
func (a *AOF) Sync() error {
	a.mu.Lock()
	f := a.f
	a.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("aof: fsync: %w", err)
	}
	return nil
}

// Rewrite replaces the base and the incr files before seq (what Rotate
// returned) with a new base that save writes: save must capture the
// keyspace as it is after the rotation, so that the base plus the incr
// files from seq on are the whole state. The new base is written and
// fsynced under a temporary name, the manifest switches to it, and the
// files it replaces are deleted; a crash at any point leaves a manifest
// whose files are all there.
func (a *AOF) Rewrite(seq int64, save func(path string) error) error {
	a.mu.Lock()
	bseq := a.base.seq + 1
	a.mu.Unlock()
	name := a.baseName(bseq)
	if err := save(a.path(name)); err != nil {
		os.Remove(a.path(name))
		return fmt.Errorf("aof: rewrite: %w", err)
	}
	fi, err := os.Stat(a.path(name))
	if err != nil {
		return fmt.Errorf("aof: rewrite: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.files()
	oldBase, oldIncrs := a.base, a.incrs
	a.base = aofFile{name: name, seq: bseq, typ: 'b'}
	i := 0
	for i < len(a.incrs) && a.incrs[i].seq < seq {
		i++
	}
	a.incrs = append([]aofFile(nil), a.incrs[i:]...)
	if err := a.writeManifest(); err != nil {
		a.base, a.incrs = oldBase, oldIncrs
		os.Remove(a.path(name))
		return err
	}
	a.baseSize = fi.Size()
	a.incrSize = 0
	keep := map[string]bool{}
	for _, f := range a.files() {
		keep[f.name] = true
	}
	for _, f := range old {
		if !keep[f.name] {
			os.Remove(a.path(f.name))
		}
	}
	for _, f := range a.incrs {
		if fi, err := os.Stat(a.path(f.name)); err == nil {
			a.incrSize += fi.Size()
		}
	}
	return nil
}

// Stats reports the files' sizes.
func (a *AOF) Stats() AOFStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AOFStats{BaseSize: a.baseSize, CurrentSize: a.baseSize + a.incrSize, Files: len(a.files())}
}

// Close fsyncs and closes the current incr file.
func (a *AOF) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Sync()
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	a.f = nil
	return err
}
