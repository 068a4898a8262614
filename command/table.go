package command

import (
	"github.com/limitdb/limitdb/persistence"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// Flag describes a command's behaviour; COMMAND and ACL categories derive
// from it.
type Flag uint32

const (
	FlagWrite     Flag = 1 << iota // may change the keyspace
	FlagReadonly                   // never changes the keyspace
	FlagFast                       // O(1) or O(log n)
	FlagAdmin                      // server administration
	FlagNoAuth                     // allowed before AUTH
	FlagLoading                    // allowed while loading
	FlagStale                      // allowed with stale data
	FlagDenyOOM                    // refused when over maxmemory
	FlagNoMulti                    // cannot be queued in MULTI
	FlagDangerous                  // flushes, shutdown, config
	// FlagSkipMonitor: the command is not shown to MONITOR once it has
	// run; it shows itself first (ShowToObserver), as EVAL and FCALL do
	// so that their script's commands follow them.
	FlagSkipMonitor
	// FlagGrows: a denyoom write that can grow a key that exists (APPEND,
	// SETRANGE, a STORE replacing its destination). Over maxmemory it is
	// refused on existing keys too, as Redis refuses it; other denyoom
	// commands on existing keys run, so that limited clients stay
	// limited. COMMAND does not show it.
	FlagGrows
	FlagNoScript // refused inside a script (BLPOP, WAIT)
	FlagBlocking // may wait for another client's write (BLPOP): in @blocking
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadonly, "readonly"}, {FlagDenyOOM, "denyoom"},
	{FlagAdmin, "admin"}, {FlagNoAuth, "no_auth"}, {FlagLoading, "loading"},
	{FlagStale, "stale"}, {FlagSkipMonitor, "skip_monitor"}, {FlagFast, "fast"}, {FlagNoMulti, "no_multi"},
	{FlagNoScript, "noscript"}, {FlagBlocking, "blocking"},
}

// Command is one entry of the command table: everything dispatch, arity
// checks, COMMAND, COMMAND DOCS and the generated reference need.
type Command struct {
	Name    string // lower case; "parent|sub" for subcommands
	Arity   int    // Redis convention: n exact, -n at least n (name included)
	MaxArgs int    // with Arity -n: the most arguments, name included (0: no bound)
	CostArg int    // a limiter's optional cost argument, by position: "0" peeks, which a read-only replica serves (0: none)
	// Peek, when set, says whether args only peek, for a command whose
	// cost is not at one position (RL.SHOULD's trailing HITS 0).
	Peek     func(args [][]byte) bool
	Flags    Flag
	FirstKey int // key positions, 0 when the command takes no key
	LastKey  int // -1: the last argument
	Step     int
	// Keys, when set, lists the keyspace keys a command touches where
	// positions cannot say: movable keys (RL.HITALL, EVAL) or derived
	// ones (a policy's rl:<policy>:<key>). MULTI and scripts lock their
	// shards.
	Keys func(args [][]byte) [][]byte
	// KeyArgs, when set, lists the key arguments a client names where
	// positions cannot say (RL.HITALL, EVAL): COMMAND reports the command
	// movablekeys and COMMAND GETKEYS and cluster slots use it.
	KeyArgs func(args [][]byte) [][]byte
	Group   string // Redis command group: connection, generic, server, rate_limit, ...
	// ACLCats, when set, are the command's ACL categories beyond those
	// its flags give, in place of its group's, where Redis's differ from
	// the group (FLUSHALL is @keyspace, WAIT @connection).
	ACLCats    []string
	Since      string // limitdb version that added it
	Complexity string
	Summary    string
	Syntax     string // arguments after the name: "key max_burst count period [quantity]"
	Handler    func(c *Client, args [][]byte)
	Subs       []*Command // subcommands (CLIENT, CONFIG, COMMAND, ...)

	stats cmdStats
}

// FullName is the command as typed: "CLIENT SETNAME".
func (cmd *Command) FullName() string {
	return strings.ToUpper(strings.ReplaceAll(cmd.Name, "|", " "))
}

// FlagNames lists the command's flags as COMMAND reports them.
func (cmd *Command) FlagNames() []string {
	var out []string
	for _, fn := range flagNames {
		if cmd.Flags&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	if cmd.KeyArgs != nil {
		out = append(out, "movablekeys")
	}
	return out
}

// Categories lists the ACL categories the command belongs to: its flags'
// and its group's, or ACLCats.
func (cmd *Command) Categories() []string {
	var out []string
	if cmd.Flags&FlagWrite != 0 {
		out = append(out, "@write")
	}
	if cmd.Flags&FlagReadonly != 0 && cmd.Group != "scripting" { // Redis keeps scripts out of @read
		out = append(out, "@read")
	}
	if cmd.Flags&FlagFast != 0 {
		out = append(out, "@fast")
	} else {
		out = append(out, "@slow")
	}
	if cmd.Flags&FlagAdmin != 0 {
		out = append(out, "@admin")
	}
	if cmd.Flags&FlagBlocking != 0 {
		out = append(out, "@blocking")
	}
	if cmd.Flags&(FlagDangerous|FlagAdmin) != 0 {
		out = append(out, "@dangerous")
	}
	switch {
	case cmd.ACLCats != nil:
		for _, cat := range cmd.ACLCats {
			if !slices.Contains(out, "@"+cat) {
				out = append(out, "@"+cat)
			}
		}
		return out
	case len(cmd.Subs) > 0: // a container is in no category of its group's, as in Redis
		return out
	}
	switch cmd.Group {
	case "generic":
		out = append(out, "@keyspace")
	case "rate_limit":
		// Changing policies is administration: RL.POLICY SET, DEL and
		// RELOAD are in a category of their own, so that an application
		// user (+@rate_limit) can hit limits but not switch them off.
		if cmd.Flags&FlagAdmin != 0 {
			out = append(out, "@rate_limit_admin")
		} else {
			out = append(out, "@rate_limit")
		}
	case "connection", "string", "pubsub", "hash", "set", "list", "scripting":
		out = append(out, "@"+cmd.Group)
	case "transactions": // Redis's group; its ACL category is singular
		out = append(out, "@transaction")
	case "sorted_set":
		out = append(out, "@sortedset")
	case "bitmap":
		out = append(out, "@bitmap")
	}
	return out
}

// Table is what the families of commands register themselves on: the
// commands the server answers, the gates that run before them, the INFO
// sections. New builds one for each
// Server, so two servers in one process share nothing.
type Table struct {
	byName    map[string]*Command
	gates     [numGates]GateFunc // gate.go: the one order
	nGates    int
	info      []infoSection
	snapshot  persistence.Sections // the snapshot sections families keep (AddSection)
	resetStat []func()
	closers   []func()
	endRound  []func()     // family.go: OnEndRound
	save      func() error // family.go: SetSave
	// connection modes (modes.go) and per-client state (family.go)
	modeChecks   [maxModes]GateFunc
	nModes       int
	nSlots       int
	clientClosed []func(c *Client)
	clientReset  []func(c *Client)
	clientInfo   []func(c *Client, b []byte) []byte
	// keys that writes made ready for blocked clients (ready.go)
	blockers atomic.Int64
	onReady  func(keys [][]byte)
	// what families offer the core and each other (observe.go)
	observer  atomic.Pointer[observer]
	decisions atomic.Pointer[decisionObserver] // decisions.go: ObserveDecisions
	publisher Publisher
	notify    atomic.Int32 // notify.go: notify-keyspace-events' classes, 0 while none reaches a channel
	// a busy server (calls.go: SetBusyCheck)
	busy      *atomic.Int32
	busyCheck GateFunc
	// a read-only server (modes.go: SetReadOnlyCheck)
	readOnly      *atomic.Bool
	readOnlyCheck GateFunc
	// a server that refuses writes (modes.go: SetMisconfCheck)
	misconf      *atomic.Bool
	misconfCheck GateFunc
	// a primary short of good replicas (modes.go: SetNoReplicasCheck)
	noReplicas      *atomic.Bool
	noReplicasCheck GateFunc
	// what CONFIG SET redoes (config.go: OnReload), and lines added at
	// the end of INFO sections (info.go: extendInfo)
	reloads   map[config.Reload][]func() error
	infoExtra map[string][]func(eng *engine.Engine, b *strings.Builder)
}

// NewTable returns the table of every built-in family of commands.
func NewTable() *Table {
	t := &Table{byName: map[string]*Command{}}
	for _, family := range []func(*Table){
		registerAuth,
		registerLimits,
		registerMemory,
		registerMulti,
		registerSlowlog,
		registerModes,
	} {
		family(t)
	}
	return t
}

// register adds commands to the table. Registering a name twice is a
// programming error caught at start-up.
func (t *Table) Register(cmds ...*Command) {
	for _, c := range cmds {
		if _, dup := t.byName[c.Name]; dup {
			panic("command: registered twice: " + c.Name)
		}
		for _, s := range c.Subs {
			if !strings.HasPrefix(s.Name, c.Name+"|") {
				panic("command: subcommand " + s.Name + " not named " + c.Name + "|...")
			}
		}
		t.byName[c.Name] = c
	}
}

// Lookup finds a command by name, any case, without allocating.
func (t *Table) Lookup(name []byte) *Command {
	var buf [32]byte
	if len(name) > len(buf) {
		return t.byName[strings.ToLower(string(name))]
	}
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return t.byName[string(buf[:len(name)])]
}

// Sorted returns the top-level commands ordered by name.
func (t *Table) Sorted() []*Command {
	out := make([]*Command, 0, len(t.byName))
	for _, c := range t.byName {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Commands is the server's command table.
func (s *Server) Commands() *Table { return s.table }

// sub finds a subcommand of cmd by name, any case.
func (cmd *Command) sub(name []byte) *Command {
	want := cmd.Name + "|" + strings.ToLower(string(name))
	for _, s := range cmd.Subs {
		if s.Name == want {
			return s
		}
	}
	return nil
}

// arityOK checks argument count (name included) against Redis's convention.
func (cmd *Command) arityOK(n int) bool {
	if cmd.Arity >= 0 {
		return n == cmd.Arity
	}
	return n >= -cmd.Arity && (cmd.MaxArgs == 0 || n <= cmd.MaxArgs)
}

// Arg is one argument in COMMAND DOCS, parsed from a command's Syntax.
type Arg struct {
	Name     string
	Type     string // key, integer, double, string, pattern, pure-token, oneof, block
	Token    string
	Optional bool
	Multiple bool
	Args     []Arg // members of oneof and block
}

// Args parses the command's Syntax into COMMAND DOCS arguments. The syntax
// language is the one Redis documents: words are arguments, UPPERCASE words
// are tokens, [...] is optional, a|b is a choice, and "..." repeats.
func (cmd *Command) Args() []Arg {
	toks := tokenizeSyntax(cmd.Syntax)
	args, _ := parseArgs(toks, 0, "")
	return args
}

func tokenizeSyntax(s string) []string {
	var out []string
	cur := strings.Builder{}
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, r := range s {
		switch r {
		case '[', ']', '|':
			flush()
			out = append(out, string(r))
		case ' ':
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

// parseArgs reads arguments until the closing token end ("]" or "").
func parseArgs(toks []string, i int, end string) ([]Arg, int) {
	var seq []Arg
	var choices [][]Arg
	for i < len(toks) && toks[i] != end {
		switch t := toks[i]; {
		case t == "[":
			inner, j := parseArgs(toks, i+1, "]")
			i = j + 1
			a := group(inner)
			a.Optional = true
			if i < len(toks) && toks[i] == "..." {
				a.Multiple = true
				i++
			}
			seq = append(seq, a)
		case t == "|":
			choices = append(choices, seq)
			seq = nil
			i++
		case t == "...":
			if len(seq) > 0 {
				seq[len(seq)-1].Multiple = true
			}
			i++
		case isToken(t):
			if i+1 < len(toks) && !isToken(toks[i+1]) && !isPunct(toks[i+1]) {
				a := plainArg(toks[i+1])
				a.Token = t
				seq = append(seq, a)
				i += 2
			} else {
				seq = append(seq, Arg{Name: strings.ToLower(t), Type: "pure-token", Token: t})
				i++
			}
		default:
			seq = append(seq, plainArg(t))
			i++
		}
	}
	if len(choices) > 0 {
		choices = append(choices, seq)
		one := Arg{Type: "oneof"}
		var names []string
		for _, c := range choices {
			g := group(c)
			one.Args = append(one.Args, g)
			names = append(names, g.Name)
		}
		one.Name = strings.Join(names, "_or_")
		return []Arg{one}, i
	}
	return seq, i
}

func group(args []Arg) Arg {
	if len(args) == 1 {
		return args[0]
	}
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a.Name
	}
	return Arg{Name: strings.Join(names, "_"), Type: "block", Args: args}
}

func plainArg(word string) Arg {
	a := Arg{Name: word, Type: "string"}
	switch {
	case word == "key" || strings.HasSuffix(word, "key"):
		a.Type = "key"
	case word == "pattern":
		a.Type = "pattern"
	case strings.Contains(word, "period") || strings.Contains(word, "window") || word == "seconds" || word == "milliseconds" || word == "ms":
		a.Type = "string" // durations take units, so they are not plain integers
	case word == "score":
		a.Type = "double"
	case word == "start" || word == "stop" || word == "offset":
		a.Type = "integer"
	case word == "count" || word == "quantity" || word == "cost" || word == "limit" || word == "capacity" ||
		word == "rate" || word == "refill" || word == "tokens" || word == "n" || word == "cursor" ||
		word == "numkeys" || word == "numpairs" || word == "max_burst" || word == "tokens_per_period" || word == "protover" || word == "db" || word == "id":
		a.Type = "integer"
	}
	return a
}

func isToken(t string) bool {
	if isPunct(t) || t == "..." {
		return false
	}
	hasUpper := false
	for _, r := range t {
		if r >= 'a' && r <= 'z' {
			return false
		}
		if r >= 'A' && r <= 'Z' {
			hasUpper = true
		}
	}
	return hasUpper
}

func isPunct(t string) bool { return t == "[" || t == "]" || t == "|" }
