package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Reload names what a running server must redo after CONFIG SET changes a
// directive; the command layer does it.
type Reload uint8

const (
	ReloadNone        Reload = iota // read where it is used: nothing to redo
	ReloadACL                       // rebuild the users from requirepass and aclfile
	ReloadLimits                    // hand the protocol and client limits to the transport
	ReloadMemory                    // reread maxmemory and its policy
	ReloadSlowlog                   // resize and re-threshold the slow log
	ReloadPersistence               // reread what a failed snapshot refuses
	ReloadReplication               // resize the replication backlog
	ReloadAppendOnly                // open or close the append-only file
	ReloadAnalytics                 // start, stop or re-period the analytics
	ReloadNotify                    // reread which keyspace notifications are published
)

// Directive is one configuration parameter, named as in Redis. The one
// table of directives drives the command-line flags (--name value), the
// config file (name value) and CONFIG GET/SET, so a parameter is defined
// once.
type Directive struct {
	Name    string
	Help    string
	Mutable bool                            // CONFIG SET may change it while running
	Get     func(c *Config) string          // current value, as CONFIG GET shows it
	Set     func(c *Config, v string) error // parse and store; nil: read-only, not a flag
	Reload  Reload                          // what a CONFIG SET of it makes the server redo
	// Protected directives name files the server writes: CONFIG SET may
	// change them only as enable-protected-configs allows, as in Redis 7
	// (else a client could point SAVE at the aclfile and overwrite it).
	Protected bool
	// Words marks a value of several words ("host port"), which CONFIG
	// REWRITE writes bare, as Redis does, and leaves out when empty.
	Words bool
	// AliasOf names the directive this one is an old name of (slaveof:
	// replicaof); CONFIG REWRITE writes the new name.
	AliasOf string
	// Repeat marks a list directive whose flag or config line may be
	// given several times, each adding to the list (region-peer); CONFIG
	// SET replaces the whole list.
	Repeat bool
}

// Directives is a set of directives by name.
type Directives struct {
	byName map[string]*Directive
}

// Add adds directives. A name added twice is a programming error caught at
// start-up.
func (ds *Directives) Add(list ...*Directive) {
	if ds.byName == nil {
		ds.byName = map[string]*Directive{}
	}
	for _, d := range list {
		if _, dup := ds.byName[d.Name]; dup {
			panic("config: directive added twice: " + d.Name)
		}
		ds.byName[d.Name] = d
	}
}

// Lookup finds a directive by name, any case; nil if there is none.
func (ds *Directives) Lookup(name string) *Directive {
	return ds.byName[strings.ToLower(name)]
}

// All returns every directive ordered by name.
func (ds *Directives) All() []*Directive {
	out := make([]*Directive, 0, len(ds.byName))
	for _, d := range ds.byName {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// String is a directive for a string field.
func String(name, help string, mutable bool, field func(c *Config) *string) *Directive {
	return &Directive{Name: name, Help: help, Mutable: mutable,
		Get: func(c *Config) string { return *field(c) },
		Set: func(c *Config, v string) error { *field(c) = v; return nil }}
}

// Int is a directive for an integer field with a minimum.
func Int(name, help string, mutable bool, min int, field func(c *Config) *int) *Directive {
	return &Directive{Name: name, Help: help, Mutable: mutable,
		Get: func(c *Config) string { return strconv.Itoa(*field(c)) },
		Set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("argument couldn't be parsed into an integer")
			}
			if n < min {
				return fmt.Errorf("argument must be at least %d", min)
			}
			*field(c) = n
			return nil
		}}
}

// Size is a directive for a byte count with a minimum, written as Redis
// writes them (ParseSize).
func Size(name, help string, mutable bool, min int64, field func(c *Config) *int64) *Directive {
	return &Directive{Name: name, Help: help, Mutable: mutable,
		Get: func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
		Set: func(c *Config, v string) error {
			n, err := ParseSize(v)
			if err != nil {
				return err
			}
			if n < min {
				return fmt.Errorf("argument must be at least %d", min)
			}
			*field(c) = n
			return nil
		}}
}

// Bool is a yes/no directive, as Redis spells booleans.
func Bool(name, help string, mutable bool, field func(c *Config) *bool) *Directive {
	return &Directive{Name: name, Help: help, Mutable: mutable,
		Get: func(c *Config) string {
			if *field(c) {
				return "yes"
			}
			return "no"
		},
		Set: func(c *Config, v string) error {
			switch strings.ToLower(v) {
			case "yes":
				*field(c) = true
			case "no":
				*field(c) = false
			default:
				return fmt.Errorf("argument must be 'yes' or 'no'")
			}
			return nil
		}}
}

// Fixed is a read-only directive that always answers value.
func Fixed(name, value string) *Directive {
	return &Directive{Name: name, Get: func(*Config) string { return value }}
}

// ParseSize reads a byte count as Redis's config does: a plain integer or one
// with a unit (k, kb, m, mb, g, gb; k is 1000 and kb 1024).
func ParseSize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || (mul > 1 && n > (1<<62)/mul) {
		return 0, fmt.Errorf("argument must be a memory value")
	}
	return n * mul, nil
}

// protected marks d as a protected directive.
func (d *Directive) protected() *Directive {
	d.Protected = true
	return d
}

// with sets what a CONFIG SET of d makes the server redo.
func (d *Directive) with(r Reload) *Directive {
	d.Reload = r
	return d
}
