package admin

import (
	"strings"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
)

func (f *Family) registerConfig(t *command.Table) {
	t.Register(&command.Command{Name: "config", Arity: -2, Group: "server", Since: "0.1.0",
		Complexity: "Depends on subcommand.", Summary: "Reads and changes the configuration.", Syntax: "subcommand",
		Subs: []*command.Command{
			{Name: "config|get", Arity: -3, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0",
				Complexity: "O(N) where N is the number of parameters", Summary: "Returns the parameters matching glob patterns.",
				Syntax: "parameter [parameter ...]", Handler: f.cmdConfigGet},
			{Name: "config|set", Arity: -4, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale | command.FlagDangerous, Group: "server", Since: "0.1.0",
				Complexity: "O(N) where N is the number of parameters", Summary: "Changes parameters at run time, all or none.",
				Syntax: "parameter value [parameter value ...]", Handler: f.cmdConfigSet},
			{Name: "config|rewrite", Arity: 2, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0",
				Complexity: "O(N) where N is the number of directives", Summary: "Rewrites the config file the server started with so that it sets the running configuration, keeping its comments.", Handler: f.cmdConfigRewrite},
			{Name: "config|resetstat", Arity: 2, Flags: command.FlagAdmin | command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0",
				Complexity: "O(1)", Summary: "Resets the command statistics.", Handler: f.cmdConfigResetStat},
			{Name: "config|help", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0",
				Complexity: "O(1)", Summary: "Lists the CONFIG subcommands.", Handler: command.HelpFor("config")},
		}})
}

func (f *Family) cmdConfigGet(c *command.Client, args [][]byte) {
	cfg := f.env.Config()
	seen := map[string]bool{}
	var out []string
	for _, a := range args[2:] {
		pat := strings.ToLower(string(a))
		for _, d := range f.env.Directives.All() {
			if !seen[d.Name] && command.GlobMatch(pat, d.Name) {
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

func (f *Family) cmdConfigSet(c *command.Client, args [][]byte) {
	if len(args)%2 != 0 {
		c.Errf("wrong number of arguments for 'config|set' command")
		return
	}
	pairs := make([][2]string, 0, len(args)/2)
	for i := 2; i < len(args); i += 2 {
		pairs = append(pairs, [2]string{string(args[i]), string(args[i+1])})
	}
	// Names are checked in order and the first bad one is the error: a
	// protected one here, the others (unknown, immutable, given twice) by
	// SetConfig, so this check stops at the first name SetConfig refuses.
	seen := map[*config.Directive]bool{}
	for _, p := range pairs {
		d := f.env.Directives.Lookup(p[0])
		if d == nil || d.Set == nil || seen[d] {
			break
		}
		seen[d] = true
		if d.Protected && !f.mayChangeProtected(c) {
			c.Errf("CONFIG SET failed (possibly related to argument '%s') - can't set protected config", p[0])
			return
		}
		if !d.Mutable {
			break
		}
	}
	if err := f.env.SetConfig(pairs...); err != nil {
		c.Error(err)
		return
	}
	c.OK()
}

// mayChangeProtected reports whether enable-protected-configs lets c
// change a protected directive.
func (f *Family) mayChangeProtected(c *command.Client) bool {
	switch f.env.Config().EnableProtectedConfigs {
	case "yes":
		return true
	case "local":
		return c.Local()
	}
	return false
}

func (f *Family) cmdConfigRewrite(c *command.Client, _ [][]byte) {
	cfg := f.env.Config()
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

func (f *Family) cmdConfigResetStat(c *command.Client, _ [][]byte) {
	f.env.ResetStats()
	c.OK()
}
