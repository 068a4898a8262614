package command

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Config is the server's configuration. Every field is reachable through a
// Directive, which is what command-line flags, the config file and
// CONFIG GET/SET all go through.
type Config struct {
	Bind string // listen address, 127.0.0.1 by default
	Port int    // 6379 by default; 0 picks a free port
	Dir  string // working directory for snapshots

	Shards int // keyspace shards; 0 means the engine's default

	EventLoop bool // event-loop: TCP connections served by one epoll loop per core (Linux; conn.go)

	// ConfigFile is the file the server's directives were read from
	// (--config), which CONFIG REWRITE rewrites; "" when there is none.
	// It is not a directive.
	ConfigFile string

	// Persistence and memory (resp/cmd_persist.go, resp/memory.go).
	Save            int    // seconds between automatic snapshots when anything changed; 0: never
	DBFilename      string // snapshot file name inside Dir
	DiscardCorrupt  bool   // start empty (moving the file aside) when the snapshot is corrupt
	MaxMemory       int64  // dataset bytes before the policy applies; 0: no limit
	MaxMemoryPolicy string // noeviction or volatile-ttl

	// Observability (resp/slowlog.go, metrics/).
	SlowlogLogSlowerThan int64  // microseconds; 0 logs every command, negative none
	SlowlogMaxLen        int    // entries the slow log keeps
	MetricsAddr          string // Prometheus endpoint address; empty: off

	Security // requirepass, aclfile, protected mode (auth.go)
	TLS      // tls-* (tls.go)
	Limits   // protocol and client limits (limits.go)

	PolicyRules // rules, rules-poll: named policies (cmd_policy.go)
}

// DefaultConfig is what a newcomer gets with no flags.
func DefaultConfig() Config {
	return Config{Bind: "127.0.0.1", Port: 6379, Dir: "./data",
		Save: 60, DBFilename: "dump.ldb", MaxMemoryPolicy: "noeviction",
		SlowlogLogSlowerThan: 10000, SlowlogMaxLen: 128,
		EventLoop: true, Security: Security{ProtectedMode: true}, TLS: TLS{TLSAuthClients: "yes"}, Limits: defaultLimits()}
}

// Directive is one configuration parameter, named as in Redis. The one
// table of directives drives the command-line flags (--name value), the
// config file (name value) and CONFIG GET/SET, so a parameter is defined once.
type Directive struct {
	Name    string
	Help    string
	Mutable bool                            // CONFIG SET may change it while running
	Get     func(c *Config) string          // current value, as CONFIG GET shows it
	Set     func(c *Config, v string) error // parse and store; nil: read-only, not a flag
	// Apply, when set, makes a CONFIG SET take effect on the running server
	// after Set changed the Config (for example resizing a limit).
	Apply func(s *Server) error
}

// RegisterDirective adds a directive; each family registers its own.
func (t *Table) RegisterDirective(d *Directive) {
	if _, dup := t.directives[d.Name]; dup {
		panic("command: directive registered twice: " + d.Name)
	}
	t.directives[d.Name] = d
}

// Directives returns every directive of the built-in families, ordered by
// name: what flags, the config file and CONFIG GET know.
func Directives() []*Directive { return NewTable().Directives() }

// Directives returns every directive ordered by name.
func (t *Table) Directives() []*Directive {
	out := make([]*Directive, 0, len(t.directives))
	for _, d := range t.directives {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupDirective finds a directive by name, any case.
func (t *Table) LookupDirective(name string) *Directive {
	return t.directives[strings.ToLower(name)]
}

// SetConfig changes parameters at run time, all or none: each is parsed
// into a copy of the configuration, and only if every one is valid and
// mutable does the copy replace the running one and are the Apply hooks run.
func (s *Server) SetConfig(pairs ...[2]string) error {
	s.cfgMu.Lock()
	next := s.cfg
	var apply []*Directive
	for _, p := range pairs {
		d := s.table.LookupDirective(p[0])
		if d == nil || d.Set == nil {
			s.cfgMu.Unlock()
			return wireError(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", p[0]))
		}
		if !d.Mutable {
			s.cfgMu.Unlock()
			return wireError(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config", d.Name))
		}
		if err := d.Set(&next, p[1]); err != nil {
			s.cfgMu.Unlock()
			return wireError(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", d.Name, err))
		}
		if d.Apply != nil {
			apply = append(apply, d)
		}
	}
	s.cfg = next
	s.cfgMu.Unlock()
	for _, d := range apply {
		if err := d.Apply(s); err != nil {
			return wireError(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", d.Name, err))
		}
	}
	return nil
}

// StringDirective is a directive for a string field.
func StringDirective(name, help string, mutable bool, field func(c *Config) *string) *Directive {
	return &Directive{Name: name, Help: help, Mutable: mutable,
		Get: func(c *Config) string { return *field(c) },
		Set: func(c *Config, v string) error { *field(c) = v; return nil }}
}

// IntDirective is a directive for an integer field with a minimum.
func IntDirective(name, help string, mutable bool, min int, field func(c *Config) *int) *Directive {
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

// BoolDirective is a yes/no directive, as Redis spells booleans.
func BoolDirective(name, help string, mutable bool, field func(c *Config) *bool) *Directive {
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

func fixedDirective(name, value string) *Directive {
	return &Directive{Name: name, Get: func(*Config) string { return value }}
}

func registerConfig(t *Table) {
	t.RegisterDirective(StringDirective("bind", "address to listen on (loopback by default)", false,
		func(c *Config) *string { return &c.Bind }))
	t.RegisterDirective(IntDirective("port", "TCP port to listen on (0 picks a free one)", false, 0,
		func(c *Config) *int { return &c.Port }))
	t.RegisterDirective(StringDirective("dir", "directory for snapshots", false,
		func(c *Config) *string { return &c.Dir }))
	t.RegisterDirective(BoolDirective("event-loop", "serve TCP connections from one epoll event loop per core (Linux; no: a goroutine per connection)", false,
		func(c *Config) *bool { return &c.EventLoop }))
	t.RegisterDirective(IntDirective("shards", "keyspace shards, rounded up to a power of two (0: 256)", false, 0,
		func(c *Config) *int { return &c.Shards }))
	// Read-only answers to what redis-benchmark and client libraries ask at start-up.
	t.RegisterDirective(fixedDirective("appendonly", "no"))
	t.RegisterDirective(fixedDirective("databases", "1"))
	t.RegisterDirective(fixedDirective("cluster-enabled", "no"))
}
