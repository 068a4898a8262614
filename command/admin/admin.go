// Package admin is the administration and INFO family: INFO, CONFIG (GET,
// SET, REWRITE, RESETSTAT, HELP), COMMAND (COUNT, INFO, DOCS, LIST,
// GETKEYS, HELP), SHUTDOWN and TIME, and the server's own INFO sections:
// server, clients, memory, stats, cpu, keyspace, commandstats and
// latencystats.
//
// It owns no state. INFO's section registry stays in the core's Table,
// which every family fills (Table.AddInfo) and this one renders through
// Env.Info; the statistics and counters it shows are the core's, read
// through Env.Stats, the Table's CommandStats and LatencyStats, and the
// engine; the configuration is changed through Env.SetConfig, whose
// reloads the owners of each directive's state register
// (Table.OnReload); SHUTDOWN stops the server through Env.Shutdown.
//
// It imports the command core, the configuration and the engine; never
// another family, the transport or the assembly.
package admin

import (
	"strconv"

	"github.com/limitdb/limitdb/command"
)

// Family is the administration and INFO commands.
type Family struct {
	env   command.Env
	table *command.Table
}

// New returns the family.
func New() *Family { return &Family{} }

// Register adds the family's commands and the server's INFO sections to t.
func (f *Family) Register(t *command.Table, env command.Env) {
	f.env, f.table = env, t
	f.registerCommand(t)
	t.Register(
		&command.Command{Name: "time", Arity: 1, Flags: command.FlagFast | command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Returns the server's clock as seconds and microseconds.", Handler: cmdTime},
		&command.Command{Name: "info", Arity: -1, Flags: command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0", ACLCats: []string{"dangerous"},
			Complexity: "O(1)", Summary: "Reports server state by section: server, clients, memory, stats, keyspace, commandstats, ...",
			Syntax: "[section [section ...]]", Handler: f.cmdInfo},
		&command.Command{Name: "shutdown", Arity: -1, Flags: command.FlagAdmin | command.FlagNoMulti | command.FlagLoading | command.FlagStale | command.FlagDangerous, Group: "server", Since: "0.1.0",
			Complexity: "O(N) when saving", Summary: "Saves a final snapshot (unless NOSAVE) and stops the server.",
			Syntax: "[NOSAVE|SAVE] [NOW] [FORCE]", Handler: f.cmdShutdown},
	)
	f.registerConfig(t)
	f.registerInfo(t)
}

func cmdTime(c *command.Client, _ [][]byte) {
	now := c.Now()
	c.Array(2)
	var buf [20]byte // no allocation: scripts call TIME on every run
	c.Bulk(strconv.AppendInt(buf[:0], now/1e9, 10))
	c.Bulk(strconv.AppendInt(buf[:0], (now%1e9)/1e3, 10))
}

func (f *Family) cmdShutdown(c *command.Client, args [][]byte) {
	save := true
	for _, a := range args[1:] {
		switch {
		case command.EqualFold(a, "nosave"):
			save = false
		case command.EqualFold(a, "save"), command.EqualFold(a, "now"), command.EqualFold(a, "force"), command.EqualFold(a, "abort"):
		default:
			c.Error(command.ErrSyntax)
			return
		}
	}
	f.env.Logger.Printf("shutdown requested by client id=%d addr=%s", c.ID, c.Addr)
	if err := f.env.Shutdown(save); err != nil {
		c.Errf("Errors trying to SHUTDOWN. Check logs. (%v)", err)
	}
}
