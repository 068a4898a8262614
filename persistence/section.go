package persistence

import (
	"fmt"
	"sort"
)

// section is one named section.
type section struct {
	name  string
	save  func() ([]byte, error)
	load  func([]byte) error
	early bool // save runs before the keys are copied (AddEarly)
}

// Sections are the named sections a snapshot carries beside the keyspace
// (named policies' counters, for example). The zero value has none. A
// server builds its own, so two servers in one process share nothing.
type Sections struct {
	byName map[string]section
}

// Add adds a named section: save returns its bytes when a snapshot is
// written; load receives them at start-up, after the file has been
// verified. Names are unique, 1 to 255 bytes; a second Add of one name
// panics.
func (ss *Sections) Add(name string, save func() ([]byte, error), load func([]byte) error) {
	ss.add(section{name: name, save: save, load: load})
}

// AddEarly adds a named section whose save runs when a snapshot begins,
// before any key is copied, though its bytes are written after the keys
// as any section's: state that describes where the keys start from (the
// replication offset they hold at least), which must not be taken after
// keys that may have moved past it.
func (ss *Sections) AddEarly(name string, save func() ([]byte, error), load func([]byte) error) {
	ss.add(section{name: name, save: save, load: load, early: true})
}

func (ss *Sections) add(sec section) {
	name := sec.name
	if _, dup := ss.byName[name]; dup {
		panic(fmt.Sprintf("persistence: section %q added twice", name))
	}
	if name == "" || len(name) > 255 {
		panic("persistence: section name must be 1 to 255 bytes")
	}
	if ss.byName == nil {
		ss.byName = map[string]section{}
	}
	ss.byName[name] = sec
}

// sorted returns the sections ordered by name, so files are stable.
func (ss *Sections) sorted() []section {
	if ss == nil {
		return nil
	}
	out := make([]section, 0, len(ss.byName))
	for _, s := range ss.byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (ss *Sections) lookup(name string) (section, bool) {
	if ss == nil {
		return section{}, false
	}
	s, ok := ss.byName[name]
	return s, ok
}

// Load hands data to the loader of the section name, as a snapshot's load
// does: how a replica applies a section its primary changed.
func (ss *Sections) Load(name string, data []byte) error {
	s, ok := ss.lookup(name)
	if !ok {
		return fmt.Errorf("unknown section %q", name)
	}
	return s.load(data)
}
