package command

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

func registerServer(t *Table) {
	t.Register(
		&Command{Name: "time", Arity: 1, Flags: FlagFast | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Returns the server's clock as seconds and microseconds.", Handler: cmdTime},
		&Command{Name: "info", Arity: -1, Flags: FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Reports server state by section: server, clients, memory, stats, keyspace, commandstats, ...",
			Syntax: "[section [section ...]]", Handler: cmdInfo},
		&Command{Name: "shutdown", Arity: -1, Flags: FlagAdmin | FlagNoMulti | FlagLoading | FlagStale | FlagDangerous, Group: "server", Since: "0.1.0",
			Complexity: "O(N) when saving", Summary: "Saves a final snapshot (unless NOSAVE) and stops the server.",
			Syntax: "[NOSAVE|SAVE] [NOW] [FORCE]", Handler: cmdShutdown},
		&Command{Name: "config", Arity: -2, Group: "server", Since: "0.1.0",
			Complexity: "Depends on subcommand.", Summary: "Reads and changes the configuration.", Syntax: "subcommand",
			Subs: []*Command{
				{Name: "config|get", Arity: -3, Flags: FlagAdmin | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(N) where N is the number of parameters", Summary: "Returns the parameters matching glob patterns.",
					Syntax: "parameter [parameter ...]", Handler: cmdConfigGet},
				{Name: "config|set", Arity: -4, Flags: FlagAdmin | FlagLoading | FlagStale | FlagDangerous, Group: "server", Since: "0.1.0",
					Complexity: "O(N) where N is the number of parameters", Summary: "Changes parameters at run time, all or none.",
					Syntax: "parameter value [parameter value ...]", Handler: cmdConfigSet},
				{Name: "config|rewrite", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(N) where N is the number of directives", Summary: "Rewrites the config file the server started with so that it sets the running configuration, keeping its comments.", Handler: cmdConfigRewrite},
				{Name: "config|resetstat", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Resets the command statistics.", Handler: cmdConfigResetStat},
				{Name: "config|help", Arity: 2, Flags: FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Lists the CONFIG subcommands.", Handler: HelpFor("config")},
			}},
	)
}

func cmdTime(c *Client, _ [][]byte) {
	now := c.Now()
	c.Array(2)
	var buf [20]byte // no allocation: scripts call TIME on every run
	c.Bulk(strconv.AppendInt(buf[:0], now/1e9, 10))
	c.Bulk(strconv.AppendInt(buf[:0], (now%1e9)/1e3, 10))
}

func cmdShutdown(c *Client, args [][]byte) {
	save := true
	for _, a := range args[1:] {
		switch {
		case EqualFold(a, "nosave"):
			save = false
		case EqualFold(a, "save"), EqualFold(a, "now"), EqualFold(a, "force"), EqualFold(a, "abort"):
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	s := c.srv
	s.logger.Printf("shutdown requested by client id=%d addr=%s", c.ID, c.Addr)
	// As in Redis, a save that fails keeps the server running and says why.
	if save && s.RequestShutdown != nil {
		if err := s.Save(); err != nil {
			c.Errf("Errors trying to SHUTDOWN. Check logs. (%v)", err)
			return
		}
	}
	// Then stop as SIGTERM does: every connection, this one included,
	// finishes the commands it has read, and the final snapshot has their
	// effects in it.
	if s.RequestShutdown == nil {
		s.Close()
		return
	}
	s.RequestShutdown(save)
}

// ---- INFO -----------------------------------------------------------------

// infoSection renders one INFO section. Sections with order < 0 appear only
// when asked for by name or with "all"/"everything".
type infoSection struct {
	name   string
	order  int
	render func(s *Server, eng *engine.Engine, b *strings.Builder)
}

// registerInfo adds an INFO section; order places it among the default ones.
func (t *Table) registerInfo(name string, order int, render func(s *Server, eng *engine.Engine, b *strings.Builder)) {
	t.info = append(t.info, infoSection{name, order, render})
	sort.SliceStable(t.info, func(i, j int) bool {
		oi, oj := t.info[i].order, t.info[j].order
		if (oi < 0) != (oj < 0) {
			return oj < 0
		}
		return oi < oj
	})
}

func registerServerInfo(t *Table) {
	t.registerInfo("server", 10, infoServer)
	t.registerInfo("clients", 20, infoClients)
	t.registerInfo("memory", 30, infoMemory)
	t.registerInfo("stats", 50, infoStats)
	t.registerInfo("commandstats", -1, infoCommandStats)
	t.registerInfo("keyspace", 90, infoKeyspace)
}

func cmdInfo(c *Client, args [][]byte) {
	c.Verbatim(c.srv.info(c.Engine(), args[1:]...))
}

// Info renders the INFO text for the given sections (none: the defaults).
func (s *Server) Info(sections ...[]byte) string { return s.info(s.eng, sections...) }

// info renders INFO reading the keyspace through eng: inside EXEC, the
// transaction's handle.
func (s *Server) info(eng *engine.Engine, sections ...[]byte) string {
	want := map[string]bool{}
	for _, a := range sections {
		want[strings.ToLower(string(a))] = true
	}
	all := want["all"] || want["everything"]
	def := len(want) == 0 || want["default"]
	var b strings.Builder
	for _, sec := range s.table.info {
		if !(want[sec.name] || all || (def && sec.order >= 0)) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		title := strings.ToUpper(sec.name[:1]) + sec.name[1:]
		if sec.name == "cpu" {
			title = "CPU" // as Redis spells it
		}
		b.WriteString("# " + title + "\r\n")
		sec.render(s, eng, &b)
	}
	return b.String()
}

func infoLine(b *strings.Builder, key string, v any) {
	fmt.Fprintf(b, "%s:%v\r\n", key, v)
}

func infoServer(s *Server, eng *engine.Engine, b *strings.Builder) {
	cfg := s.Config()
	up := s.since(s.started)
	infoLine(b, "redis_version", redisVersion)
	infoLine(b, "limitdb_version", Version)
	mode := "standalone"
	if s.cluster.on {
		mode = "cluster"
	}
	infoLine(b, "redis_mode", mode)
	infoLine(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	infoLine(b, "arch_bits", strconv.IntSize)
	infoLine(b, "go_version", runtime.Version())
	infoLine(b, "process_id", os.Getpid())
	infoLine(b, "run_id", s.runID)
	infoLine(b, "tcp_port", portOf(s))
	infoLine(b, "uptime_in_seconds", int64(up/time.Second))
	infoLine(b, "uptime_in_days", int64(up/(24*time.Hour)))
	infoLine(b, "gomaxprocs", runtime.GOMAXPROCS(0))
	infoLine(b, "shards", s.eng.Shards())
	infoLine(b, "bind", cfg.Bind)
	infoLine(b, "config_file", cfg.ConfigFile)
}

func portOf(s *Server) string {
	if p := s.listenPort.Load(); p != 0 {
		return strconv.FormatInt(p, 10)
	}
	return strconv.Itoa(s.Config().Port)
}

// SetListenPort records the port the server listens on, which INFO shows
// (the configured one may be 0: any free port).
func (s *Server) SetListenPort(port int) { s.listenPort.Store(int64(port)) }

func infoClients(s *Server, eng *engine.Engine, b *strings.Builder) {
	n := s.clients.count()
	infoLine(b, "connected_clients", n)
	_, maxOut := s.clientMemory()
	infoLine(b, "client_recent_max_output_buffer", maxOut)
	infoLine(b, "blocked_clients", 0)
}

// clientMemory is what the connections hold (replies not sent, read
// buffers) and the largest unsent replies of one.
func (s *Server) clientMemory() (total, maxOut int64) {
	for _, c := range s.clients.list() {
		if c.conn != nil {
			total += c.conn.Memory()
			maxOut = max(maxOut, c.conn.OutputMemory())
		}
	}
	return total, maxOut
}

func infoMemory(s *Server, eng *engine.Engine, b *strings.Builder) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	infoLine(b, "used_memory", ms.HeapAlloc)
	infoLine(b, "used_memory_human", humanBytes(ms.HeapAlloc))
	infoLine(b, "used_memory_rss", ms.Sys-ms.HeapReleased)
	infoLine(b, "used_memory_rss_human", humanBytes(ms.Sys-ms.HeapReleased))
	infoLine(b, "used_memory_sys", ms.Sys)
	infoLine(b, "heap_objects", ms.HeapObjects)
	infoLine(b, "gc_cycles", ms.NumGC)
	clients, _ := s.clientMemory()
	infoLine(b, "mem_clients_normal", clients)
	infoMaxMemory(s, eng, b)
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

func infoStats(s *Server, eng *engine.Engine, b *strings.Builder) {
	st := eng.Stats()
	infoLine(b, "total_connections_received", s.totalConns.Load())
	infoLine(b, "total_commands_processed", s.totalCmds.Load())
	infoLine(b, "rejected_connections", s.rejectedConn.Load())
	infoLine(b, "expired_keys", st.ExpiredKeys)
	infoLine(b, "evicted_keys", s.mem.evicted.Load())
	infoLine(b, "keyspace_hits", st.KeyspaceHits)
	infoLine(b, "keyspace_misses", st.KeyspaceMiss)
	if s.repl != nil {
		rs := s.repl.Status()
		infoLine(b, "sync_full", rs.SyncFull)
		infoLine(b, "sync_partial_ok", rs.SyncPartialOK)
		infoLine(b, "sync_partial_err", rs.SyncPartialErr)
	}
}

func infoCommandStats(s *Server, eng *engine.Engine, b *strings.Builder) {
	var each func(cmds []*Command)
	each = func(cmds []*Command) {
		for _, cmd := range cmds {
			if calls := cmd.stats.calls.Load(); calls > 0 || cmd.stats.rejected.Load() > 0 {
				usec := cmd.stats.usec.Load()
				per := 0.0
				if calls > 0 {
					per = float64(usec) / float64(calls)
				}
				fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
					cmd.Name, calls, usec, per, cmd.stats.rejected.Load(), cmd.stats.failed.Load())
			}
			each(cmd.Subs)
		}
	}
	each(s.table.Sorted())
}

func infoKeyspace(s *Server, eng *engine.Engine, b *strings.Builder) {
	if n := eng.Len(); n > 0 {
		fmt.Fprintf(b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", n, n)
	}
}

// ---- CONFIG ---------------------------------------------------------------

func cmdConfigGet(c *Client, args [][]byte) {
	cfg := c.srv.Config()
	seen := map[string]bool{}
	var out []string
	for _, a := range args[2:] {
		pat := strings.ToLower(string(a))
		for _, d := range c.srv.directives.All() {
			if !seen[d.Name] && GlobMatch(pat, d.Name) {
				seen[d.Name] = true
				out = append(out, d.Name, d.Get(&cfg))
			}
		}
	}
	c.Map(len(out) / 2)
	for _, s := range out {
		c.BulkString(s)
	}
}

func cmdConfigSet(c *Client, args [][]byte) {
	if len(args)%2 != 0 {
		c.Errf("wrong number of arguments for 'config|set' command")
		return
	}
	pairs := make([][2]string, 0, len(args)/2)
	for i := 2; i < len(args); i += 2 {
		pairs = append(pairs, [2]string{string(args[i]), string(args[i+1])})
		if d := c.srv.directives.Lookup(string(args[i])); d != nil && d.Protected && !c.mayChangeProtected() {
			c.Errf("CONFIG SET failed (possibly related to argument '%s') - can't set protected config", d.Name)
			return
		}
	}
	if err := c.srv.SetConfig(pairs...); err != nil {
		c.Error(err)
		return
	}
	c.OK()
}

// mayChangeProtected reports whether enable-protected-configs lets this
// client change a protected directive.
func (c *Client) mayChangeProtected() bool {
	switch c.srv.Config().EnableProtectedConfigs {
	case "yes":
		return true
	case "local":
		return c.conn == nil || c.conn.Loopback()
	}
	return false
}

func cmdConfigRewrite(c *Client, _ [][]byte) {
	cfg := c.srv.Config()
	if cfg.ConfigFile == "" {
		c.Err("ERR The server is running without a config file")
		return
	}
	if err := config.RewriteFile(cfg.ConfigFile, &cfg); err != nil {
		c.Err("ERR Rewriting config file: " + err.Error())
		return
	}
	c.OK()
}

func cmdConfigResetStat(c *Client, _ [][]byte) {
	var each func(cmds []*Command)
	each = func(cmds []*Command) {
		for _, cmd := range cmds {
			cmd.stats.calls.Store(0)
			cmd.stats.usec.Store(0)
			cmd.stats.rejected.Store(0)
			cmd.stats.failed.Store(0)
			cmd.stats.admitted.Store(0)
			cmd.stats.denied.Store(0)
			for i := range cmd.stats.lat {
				cmd.stats.lat[i].Store(0)
			}
			each(cmd.Subs)
		}
	}
	each(c.srv.table.Sorted())
	c.srv.totalCmds.Store(0)
	for _, reset := range c.srv.table.resetStat {
		reset()
	}
	c.OK()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
