package policy

import (
	"crypto/sha256"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/limitdb/limitdb/clock"
)

// watchState is what the watcher remembers about the rules file between
// polls. Its own mutex serialises loads (a poll and RL.POLICY RELOAD).
type watchState struct {
	mu      sync.Mutex
	path    string
	modTime time.Time
	size    int64
	polls   int
	good    [32]byte // hash of the contents in effect
	seen    [32]byte // hash of the last contents read, good or not
	lastErr string   // last problem logged, so a broken file logs once
}

// DefaultPoll is how often Watch looks at the rules file.
const DefaultPoll = time.Second

// hashEvery forces a read and hash every this many polls even when the
// file's modification time and size look unchanged (an edit within the
// file system's timestamp granularity that keeps the size).
const hashEvery = 5

// LoadRules sets the rules file and loads it. On error nothing changes
// (the store keeps no rules file), so start-up can refuse a broken file.
func (s *Store) LoadRules(path string) error {
	w := &s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.path
	w.path = path
	if err := s.loadLocked(true); err != nil {
		w.path = old
		return err
	}
	return nil
}

// StopRules forgets the rules file path and the policies it defined, if
// path is still the file in use (the server that loaded it is closing).
func (s *Store) StopRules(path string) {
	w := &s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.path != path {
		return
	}
	w.path, w.modTime, w.size, w.good, w.seen, w.lastErr = "", time.Time{}, 0, [32]byte{}, [32]byte{}, ""
	s.setFile(nil)
}

// RulesPath is the rules file in use, "" when there is none.
func (s *Store) RulesPath() string {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.path
}

// Reload reads the rules file now and applies it if it is valid; a broken
// file keeps the rules in effect and returns (and logs) why.
func (s *Store) Reload() error {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if s.watch.path == "" {
		return ErrNoRulesFile
	}
	err := s.loadLocked(true)
	s.logFailure(err)
	return err
}

// Watch polls the rules file every interval (DefaultPoll if <= 0) of clk until
// done is closed, applying each valid change and logging each broken one
// once. It looks at the modification time and size, and reads and hashes
// the contents when they change (and every few polls regardless), so
// identical contents are never re-applied.
func (s *Store) Watch(done <-chan struct{}, interval time.Duration, clk clock.Clock) {
	if interval <= 0 {
		interval = DefaultPoll
	}
	t := clk.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C():
			s.poll()
		}
	}
}

func (s *Store) poll() {
	w := &s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.path == "" {
		return
	}
	w.polls++
	fi, err := os.Stat(w.path)
	if err != nil {
		s.logFailure(err) // the os error names the file
		return
	}
	if fi.ModTime().Equal(w.modTime) && fi.Size() == w.size && w.polls%hashEvery != 0 {
		return
	}
	s.logFailure(s.loadLocked(false))
}

// MaxRulesFileBytes bounds the rules file: a larger one is refused by its
// size, unread, and the rules in effect stay. 16 MiB is over 100,000
// policies.
const MaxRulesFileBytes = 16 << 20

// loadLocked reads, validates and applies the rules file; the caller holds
// watch.mu. Unless forced, contents already seen (good or broken) are left
// alone. It logs what it applies; the callers log failures, because only
// they know whether there are last good rules to keep.
func (s *Store) loadLocked(force bool) error {
	w := &s.watch
	fi, statErr := os.Stat(w.path)
	if statErr == nil && fi.Size() > MaxRulesFileBytes {
		return fmt.Errorf("policy: %s holds %d bytes, more than the %d a rules file may hold", w.path, fi.Size(), int64(MaxRulesFileBytes))
	}
	data, err := os.ReadFile(w.path)
	if err != nil {
		return err // the os error names the file
	}
	if statErr == nil {
		w.modTime, w.size = fi.ModTime(), fi.Size()
	}
	sum := sha256.Sum256(data)
	if !force && sum == w.good {
		w.seen, w.lastErr = sum, "" // back to the rules in effect
		return nil
	}
	if !force && sum == w.seen {
		return nil
	}
	w.seen = sum
	ps, err := ParseRules(w.path, data)
	if err != nil {
		return err
	}
	s.setFile(ps)
	w.good, w.lastErr = sum, ""
	s.logger.Load().Printf("rules: applied %d policies from %s", len(ps), w.path)
	return nil
}

// logFailure logs why the rules file was not applied, once per distinct
// problem; the caller holds watch.mu. nil logs nothing.
func (s *Store) logFailure(err error) {
	if err == nil {
		return
	}
	msg := fmt.Sprintf("rules: %s not applied, keeping the last good rules: %v", s.watch.path, err)
	if msg != s.watch.lastErr {
		s.watch.lastErr = msg
		s.logger.Load().Print(msg)
	}
}
