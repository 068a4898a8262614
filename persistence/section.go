package persistence

import (
	"fmt"
	"sort"
	"sync"
)

// section is one registered named section.
type section struct {
	name string
	save func() ([]byte, error)
	load func([]byte) error
}

var (
	sectionsMu sync.Mutex
	sections   = map[string]section{}
)

// RegisterSection adds a named section to every snapshot: save returns its
// bytes when a snapshot is written; load receives them at start-up, after
// the file has been verified. Call it from init. Names are unique; a second
// registration of one name panics.
func RegisterSection(name string, save func() ([]byte, error), load func([]byte) error) {
	sectionsMu.Lock()
	defer sectionsMu.Unlock()
	if _, dup := sections[name]; dup {
		panic(fmt.Sprintf("persistence: section %q registered twice", name))
	}
	if name == "" || len(name) > 255 {
		panic("persistence: section name must be 1 to 255 bytes")
	}
	sections[name] = section{name, save, load}
}

// registered returns the sections ordered by name, so files are stable.
func registered() []section {
	sectionsMu.Lock()
	defer sectionsMu.Unlock()
	out := make([]section, 0, len(sections))
	for _, s := range sections {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func lookupSection(name string) (section, bool) {
	sectionsMu.Lock()
	defer sectionsMu.Unlock()
	s, ok := sections[name]
	return s, ok
}
