package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/limitdb/limitdb/engine/calendar"
	"github.com/limitdb/limitdb/engine/limit"
	"gopkg.in/yaml.v3"
)

// LineError is one problem in a rules file, at a line, about a field.
type LineError struct {
	File  string
	Line  int
	Where string // "policies[2] (api-per-user)", or "" at the top level
	Field string // "limit", "period", ...; "" when not about one field
	Msg   string
}

func (e *LineError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	if e.Where != "" {
		b.WriteString(e.Where + ": ")
	}
	if e.Field != "" {
		b.WriteString("field " + e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// FileError is every problem found in a rules file, in line order.
type FileError struct{ Errs []*LineError }

func (e *FileError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, le := range e.Errs {
		msgs[i] = le.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap exposes the line errors to errors.As.
func (e *FileError) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, le := range e.Errs {
		out[i] = le
	}
	return out
}

// maxFileErrors bounds how many problems one load reports.
const maxFileErrors = 20

// ParseRules reads a rules file's contents (file names it in errors):
//
//	policies:
//	  - name: api-per-user
//	    algorithm: gcra
//	    limit: 100
//	    period: 1m
//	    burst: 20
//	    shadow: false
//	  - name: monthly-quota
//	    algorithm: fixed_window
//	    limit: 10000
//	    period: month
//	    timezone: Europe/Paris
//	  - name: api-global
//	    algorithm: sliding_window
//	    limit: 6000
//	    period: 1m
//	    scope: global
//
// name, algorithm, limit and period are required; burst and shadow are
// optional; scope is local (the default) or global, one limit shared
// with the peer regions (global.go); wait_replicas holds the replies of
// commands on the policy until that many replicas have their effect
// (wait.go). A period of day, week, month, year or business_day is a
// calendar window, in the IANA zone timezone names (UTC if none), with
// holidays (a list of 2006-01-02 dates) for business_day. Unknown fields, duplicate names and invalid values are errors
// that name the line and the field. An empty file is an error (an editor
// caught mid-write must not drop every policy); "policies: []" defines none.
func ParseRules(file string, data []byte) ([]Policy, error) {
	p := &rulesParser{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, p.yamlError(err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		p.add(1, "", "", "the file is empty (write \"policies: []\" to define none)")
		return nil, p.err()
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.add(root.Line, "", "", "expected a mapping with a \"policies\" list at the top level")
		return nil, p.err()
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "policies":
			list = v
		default:
			p.add(k.Line, "", "", fmt.Sprintf("unknown top-level key %q (only \"policies\")", k.Value))
		}
	}
	if list == nil {
		p.add(root.Line, "", "policies", "missing")
		return nil, p.err()
	}
	if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		return nil, p.err() // "policies:" with nothing: none
	}
	if list.Kind != yaml.SequenceNode {
		p.add(list.Line, "", "policies", "must be a list of policies")
		return nil, p.err()
	}
	var out []Policy
	seen := map[string]int{}
	for i, item := range list.Content {
		pol, ok := p.policy(i, item)
		if !ok {
			continue
		}
		if line, dup := seen[pol.Name]; dup {
			p.add(item.Line, where(i, pol.Name), "name", fmt.Sprintf("duplicate policy name (first defined on line %d)", line))
			continue
		}
		seen[pol.Name] = item.Line
		out = append(out, pol)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return out, nil
}

type rulesParser struct {
	file string
	errs []*LineError
}

func (p *rulesParser) add(line int, where, field, msg string) {
	if len(p.errs) < maxFileErrors {
		p.errs = append(p.errs, &LineError{File: p.file, Line: line, Where: where, Field: field, Msg: msg})
	}
}

func (p *rulesParser) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return &FileError{Errs: p.errs}
}

// yamlError turns yaml.v3's "yaml: line N: msg" into a LineError.
func (p *rulesParser) yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if n, _ := fmt.Sscanf(msg, "line %d:", &line); n == 1 {
		if i := strings.Index(msg, ":"); i >= 0 {
			msg = strings.TrimSpace(msg[i+1:])
		}
	}
	p.add(line, "", "", "invalid YAML: "+msg)
	return p.err()
}

func where(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("policies[%d]", i)
	}
	return fmt.Sprintf("policies[%d] (%s)", i, name)
}

// policy reads one list item; it reports false after recording errors.
func (p *rulesParser) policy(i int, n *yaml.Node) (Policy, bool) {
	if n.Kind != yaml.MappingNode {
		p.add(n.Line, where(i, ""), "", "must be a mapping of name, algorithm, limit, period, burst, shadow, timezone, holidays")
		return Policy{}, false
	}
	before := len(p.errs)
	fields := map[string]*yaml.Node{}
	keyLine := map[string]int{}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		if _, dup := fields[k.Value]; dup {
			p.add(k.Line, where(i, ""), k.Value, fmt.Sprintf("given twice (first on line %d)", keyLine[k.Value]))
			continue
		}
		fields[k.Value], keyLine[k.Value] = v, k.Line
	}
	var pol Policy
	if v := fields["name"]; v != nil && v.Kind == yaml.ScalarNode {
		pol.Name = v.Value
	}
	at := where(i, pol.Name)
	for j := 0; j+1 < len(n.Content); j += 2 {
		switch k := n.Content[j]; k.Value {
		case "name", "algorithm", "limit", "period", "burst", "shadow", "timezone", "holidays", "scope", "wait_replicas":
		default:
			p.add(k.Line, at, k.Value, "unknown field (expected name, algorithm, limit, period, burst, shadow, timezone, holidays, scope, wait_replicas)")
		}
	}
	for _, req := range []string{"name", "algorithm", "limit", "period"} {
		if fields[req] == nil {
			p.add(n.Line, at, req, "missing")
		}
	}
	if v := fields["name"]; v != nil && !ValidName(scalar(v)) {
		p.add(v.Line, at, "name", fmt.Sprintf("%q is not a valid policy name (1 to %d characters of A-Z a-z 0-9 _ . -)", scalar(v), MaxNameLen))
	}
	if v := fields["algorithm"]; v != nil {
		a, ok := ParseAlgorithm(scalar(v))
		if !ok {
			p.add(v.Line, at, "algorithm", fmt.Sprintf("unknown algorithm %q (use %s)", scalar(v), algorithmList()))
		}
		pol.Algorithm = a
	}
	if v := fields["limit"]; v != nil {
		pol.Limit = p.integer(v, at, "limit")
	}
	if v := fields["period"]; v != nil {
		if u, ok := calendar.ParseUnit(scalar(v)); ok && v.Kind == yaml.ScalarNode {
			pol.Calendar.Unit = u
		} else {
			pol.Period = p.period(v, at)
		}
	}
	if v := fields["timezone"]; v != nil {
		if v.Kind != yaml.ScalarNode || v.Tag != "!!str" || v.Value == "" {
			p.add(v.Line, at, "timezone", fmt.Sprintf("must be an IANA zone name such as Europe/Paris, got %q", scalar(v)))
		}
		pol.Calendar.Timezone = v.Value
	}
	if v := fields["holidays"]; v != nil {
		pol.Calendar.Holidays = p.holidays(v, at)
	}
	if v := fields["burst"]; v != nil {
		pol.Burst = p.integer(v, at, "burst")
	}
	if v := fields["shadow"]; v != nil {
		if v.Kind != yaml.ScalarNode || v.Decode(&pol.Shadow) != nil || v.Tag != "!!bool" {
			p.add(v.Line, at, "shadow", fmt.Sprintf("must be true or false, got %q", scalar(v)))
		}
	}
	if v := fields["scope"]; v != nil {
		switch scalar(v) {
		case "global":
			pol.Global = true
		case "local":
		default:
			p.add(v.Line, at, "scope", fmt.Sprintf("must be local or global, got %q", scalar(v)))
		}
	}
	if v := fields["wait_replicas"]; v != nil {
		pol.WaitReplicas = int(p.integer(v, at, "wait_replicas")) // bounds: Validate's
	}
	if len(p.errs) > before {
		return Policy{}, false
	}
	if err := pol.Validate(); err != nil {
		var fe *FieldError
		line := n.Line
		if errors.As(err, &fe) {
			if v := fields[fe.Field]; v != nil {
				line = v.Line
			}
			p.add(line, at, fe.Field, fe.Msg)
		} else {
			p.add(line, at, "", err.Error())
		}
		return Policy{}, false
	}
	return pol, true
}

func scalar(v *yaml.Node) string {
	if v.Kind != yaml.ScalarNode {
		return "<" + kindName(v.Kind) + ">"
	}
	return v.Value
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return "value"
}

// integer reads a whole number; the bound checks are Validate's.
func (p *rulesParser) integer(v *yaml.Node, at, field string) int64 {
	var n int64
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil {
		p.add(v.Line, at, field, fmt.Sprintf("must be a whole number, got %q", scalar(v)))
		return 0
	}
	return n
}

// holidays reads a list of dates, joined with commas (their checks are
// Validate's).
func (p *rulesParser) holidays(v *yaml.Node, at string) string {
	if v.Kind != yaml.SequenceNode {
		p.add(v.Line, at, "holidays", fmt.Sprintf("must be a list of dates such as [2025-12-25, 2026-01-01], got %s", scalar(v)))
		return ""
	}
	dates := make([]string, 0, len(v.Content))
	for _, d := range v.Content {
		if d.Kind != yaml.ScalarNode || d.Value == "" || strings.Contains(d.Value, ",") {
			p.add(d.Line, at, "holidays", fmt.Sprintf("must be dates such as 2025-12-25, got %q", scalar(d)))
			return ""
		}
		dates = append(dates, d.Value)
	}
	return strings.Join(dates, ",")
}

// period reads an integer (seconds) or a duration with a unit.
func (p *rulesParser) period(v *yaml.Node, at string) time.Duration {
	if v.Kind != yaml.ScalarNode {
		p.add(v.Line, at, "period", fmt.Sprintf("must be a duration such as 60, 250ms, 1s, 5m, 1h or 1d, got %s", scalar(v)))
		return 0
	}
	d, err := limit.ParseDuration(v.Value)
	if err != nil {
		p.add(v.Line, at, "period", fmt.Sprintf("invalid duration %q: %v (or a calendar period: %s)", v.Value, err, calendar.Units))
		return 0
	}
	return d
}
