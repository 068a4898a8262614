package command

import (
	"fmt"
	"strings"
)

// Reference renders the command table as the Markdown command reference in
// docs/commands.md, so the documentation can never drift from what the
// server answers (a test compares the two).
func (t *Table) Reference() string {
	var b strings.Builder
	b.WriteString("# limitdb command reference\n\n")
	b.WriteString("Generated from the command table (`command/`); regenerate with\n")
	b.WriteString("`go test ./node -run TestCommandReference -update`. `COMMAND DOCS` serves the same text.\n\n")
	groups := map[string][]*Command{}
	var order []string
	for _, c := range t.Sorted() {
		if _, ok := groups[c.Group]; !ok {
			order = append(order, c.Group)
		}
		groups[c.Group] = append(groups[c.Group], c)
	}
	rank := map[string]int{"rate_limit": 0, "string": 1, "hash": 2, "list": 3, "set": 4, "sorted_set": 5, "generic": 6, "transactions": 7, "connection": 8, "server": 9}
	sortByRank(order, rank)
	for _, g := range order {
		fmt.Fprintf(&b, "## %s\n\n| command | arity | flags | summary |\n|---|---|---|---|\n", groupTitle(g))
		for _, c := range groups[g] {
			writeRefRow(&b, c)
			for _, s := range c.Subs {
				writeRefRow(&b, s)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func writeRefRow(b *strings.Builder, c *Command) {
	syntax := c.FullName()
	if c.Syntax != "" {
		syntax += " " + c.Syntax
	}
	// GitHub's tables split cells at every unescaped |, code spans included.
	fmt.Fprintf(b, "| `%s` | %d | %s | %s |\n", strings.ReplaceAll(syntax, "|", "\\|"), c.Arity, strings.Join(c.FlagNames(), ", "),
		strings.ReplaceAll(c.Summary, "|", "\\|"))
}

func groupTitle(g string) string {
	switch g {
	case "rate_limit":
		return "Rate limiting"
	case "generic":
		return "Keyspace"
	case "sorted_set":
		return "Sorted set"
	}
	return strings.ToUpper(g[:1]) + g[1:]
}

func sortByRank(names []string, rank map[string]int) {
	r := func(n string) int {
		if v, ok := rank[n]; ok {
			return v
		}
		return 100
	}
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && (r(names[j]) < r(names[j-1]) || (r(names[j]) == r(names[j-1]) && names[j] < names[j-1])); j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
}

// HelpFor answers PARENT HELP from the subcommand table.
func HelpFor(parent string) func(c *Client, args [][]byte) {
	return func(c *Client, _ [][]byte) {
		p := c.srv.table.byName[parent]
		lines := []string{fmt.Sprintf("%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", p.FullName())}
		for _, s := range p.Subs {
			sub := strings.TrimPrefix(s.FullName(), p.FullName()+" ")
			lines = append(lines, strings.TrimSpace(sub+" "+s.Syntax), "    "+s.Summary)
		}
		c.Array(len(lines))
		for _, l := range lines {
			c.Simple(l)
		}
	}
}
