package command

import (
	"fmt"
	"sort"
	"strings"

	"github.com/limitdb/limitdb/engine"
)

// INFO's sections: the registry lives in the table, which the core and
// the families fill (AddInfo); the INFO command renders it through
// Env.Info.

// infoSection renders one INFO section. Sections with order < 0 appear only
// when asked for by name or with "all"/"everything".
type infoSection struct {
	name   string
	order  int
	render func(eng *engine.Engine, b *strings.Builder)
}

// AddInfo adds an INFO section; order places it among the default ones
// (sections of equal order keep the order they were added in), and order
// < 0 shows it only when asked for by name or with "all". render reads
// the keyspace through eng: inside EXEC, the transaction's.
func (t *Table) AddInfo(name string, order int, render func(eng *engine.Engine, b *strings.Builder)) {
	t.info = append(t.info, infoSection{name, order, render})
	sort.SliceStable(t.info, func(i, j int) bool {
		oi, oj := t.info[i].order, t.info[j].order
		if (oi < 0) != (oj < 0) {
			return oj < 0
		}
		return oi < oj
	})
}

// ExtendInfo adds lines at the end of the INFO section name, whichever
// family renders the section, after those added before: INFO stats'
// sync_* lines are the replicas', INFO limits' policy_* lines the named
// policies'. Lines are "name:value" or "name:k=v,k=v" ending in "\r\n";
// render reads the keyspace through eng, the transaction's inside EXEC.
func (t *Table) ExtendInfo(name string, render func(eng *engine.Engine, b *strings.Builder)) {
	if t.infoExtra == nil {
		t.infoExtra = map[string][]func(eng *engine.Engine, b *strings.Builder){}
	}
	t.infoExtra[name] = append(t.infoExtra[name], render)
}

// Info renders the INFO text for the given sections (none: the defaults).
func (s *Server) Info(sections ...[]byte) string { return s.info(s.env.Engine, sections...) }

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
		sec.render(eng, &b)
		for _, render := range s.table.infoExtra[sec.name] {
			render(eng, &b)
		}
	}
	return b.String()
}

// InfoLine writes one INFO field, key:value, as the families' renderers
// (AddInfo, ExtendInfo) write theirs.
func InfoLine(b *strings.Builder, key string, v any) {
	fmt.Fprintf(b, "%s:%v\r\n", key, v)
}

// InfoBool is INFO's spelling of a flag: 1 or 0.
func InfoBool(v bool) int {
	if v {
		return 1
	}
	return 0
}
