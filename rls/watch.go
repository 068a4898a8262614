package rls

import (
	"crypto/sha256"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/limitdb/limitdb/clock"
)

// Live reload of the rules directory, as envoyproxy/ratelimit reloads its
// runtime directory: the directory is polled on the server's clock, and a
// changed set of files is loaded whole and swapped in atomically (requests
// in flight finish with the rules they started with). A set that does not
// load keeps the last good rules; why is logged once per distinct problem
// and kept for LastError.

// DefaultPoll is how often Watch looks at the rules directory.
const DefaultPoll = time.Second

// watchState is what the watcher remembers between polls; mu serialises
// loads.
type watchState struct {
	mu      sync.Mutex
	dir     string
	logger  *log.Logger
	good    [32]byte // hash of the files in effect
	seen    [32]byte // hash of the files last read, good or not
	lastErr string   // the problem in the files last read, "" when they loaded
	merge   bool     // files of one domain are merged (SetMergeDomains)
	max     int64    // the most bytes the files may hold (SetMaxConfigBytes)
}

// SetMaxConfigBytes sets rls-config-max-bytes: the most bytes the rules
// directory's files may hold together (0: no cap). It applies from the
// next load.
func (s *Service) SetMaxConfigBytes(n int64) {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	s.watch.max = n
}

// SetMergeDomains chooses whether two files of one domain are merged, as
// envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG merges them (Config.Add), or
// are an error (the default). It applies from the next load.
func (s *Service) SetMergeDomains(on bool) {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	s.watch.merge = on
}

// LoadDir loads dir's rules, makes them the rules in use and remembers dir
// for Watch and Reload. On error nothing changes, so start-up can refuse a
// broken directory. logger (nil: the standard logger) hears every reload.
func (s *Service) LoadDir(dir string, logger *log.Logger) error {
	if logger == nil {
		logger = log.Default()
	}
	w := &s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	sum, err := hashDir(dir, w.max)
	if err != nil {
		return err
	}
	c, err := LoadDir(dir, w.merge, w.max)
	if err != nil {
		return err
	}
	s.SetRules(c)
	w.dir, w.logger, w.good, w.seen, w.lastErr = dir, logger, sum, sum, ""
	return nil
}

// Watch polls the rules directory every interval (DefaultPoll if <= 0) of
// clk until done is closed, applying each change that loads.
func (s *Service) Watch(done <-chan struct{}, interval time.Duration, clk clock.Clock) {
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
			s.poll(false)
		}
	}
}

// Reload reads the rules directory now and applies it if it loads; a
// broken file keeps the rules in use and returns why.
func (s *Service) Reload() error { return s.poll(true) }

// LastError is why the rules directory's current contents are not in use
// ("file:line: field: why"), or "" when they are.
func (s *Service) LastError() string {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.lastErr
}

// poll loads the directory when its files changed since the last read
// (always when forced) and logs the outcome.
func (s *Service) poll(force bool) error {
	w := &s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dir == "" {
		return nil
	}
	sum, err := hashDir(w.dir, w.max)
	switch {
	case err != nil:
	case !force && sum == w.good:
		w.seen, w.lastErr = sum, "" // back to the rules in use
		return nil
	case !force && sum == w.seen:
		if w.lastErr != "" {
			return fmt.Errorf("%s", w.lastErr)
		}
		return nil
	default:
		w.seen = sum
		var c *Config
		if c, err = LoadDir(w.dir, w.merge, w.max); err == nil {
			s.SetRules(c)
			w.good, w.lastErr = sum, ""
			w.logger.Printf("rls: applied %d domains from %s", len(c.Domains()), w.dir)
			return nil
		}
	}
	msg := fmt.Sprintf("rls: %s not applied, keeping the last good rules: %v", w.dir, err)
	if msg != w.lastErr {
		w.logger.Print(msg)
	}
	w.lastErr = msg
	return err
}

// hashDir hashes the names and contents of the files LoadDir would read,
// so a poll loads only when something it reads changed.
func hashDir(dir string, maxBytes int64) ([32]byte, error) {
	files, err := readRuleFiles(dir, maxBytes)
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, len(f.data))
		h.Write(f.data)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// ruleFile reports whether LoadDir reads e: a regular file named *.yaml
// or *.yml, not a dotfile.
func ruleFile(e os.DirEntry) bool {
	name := e.Name()
	ext := filepath.Ext(name)
	return e.Type().IsRegular() && !strings.HasPrefix(name, ".") && (ext == ".yaml" || ext == ".yml")
}
