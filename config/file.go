package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// The config file (limitdb --config limitdb.conf) uses redis.conf's syntax:
// one "directive value" per line, blank lines and lines starting with #
// ignored, arguments split on spaces, "double quotes" with \n \r \t \b \a
// \\ \" and \xHH escapes, 'single quotes' with \' . A directive given
// several arguments gets them joined by one space, as CONFIG SET would get
// them in one string (save "900 1"). Every directive is one of the table's
// (limitdb --help lists them); an unknown one, or a bad value, stops
// start-up with the line number, as Redis does. Flags on the command line
// are applied after the file, so they win.

// Line is one directive read from a config file.
type Line struct {
	Line  int
	Name  string
	Value string
}

// Parse reads directives in redis.conf syntax.
func Parse(r io.Reader) ([]Line, error) {
	var out []Line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		args, err := splitArgs(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w: %s", n, err, line)
		}
		if len(args) < 2 {
			return nil, fmt.Errorf("line %d: wrong number of arguments: %s", n, line)
		}
		out = append(out, Line{n, strings.ToLower(args[0]), strings.Join(args[1:], " ")})
	}
	return out, sc.Err()
}

var errUnbalanced = errors.New("unbalanced quotes")

// splitArgs splits a line the way Redis's sdssplitargs does.
func splitArgs(line string) ([]string, error) {
	var args []string
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, nil
		}
		var cur strings.Builder
		switch line[i] {
		case '"':
			i++
			for {
				if i >= len(line) {
					return nil, errUnbalanced
				}
				ch := line[i]
				if ch == '"' {
					i++
					break
				}
				if ch == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]) {
					v, _ := strconv.ParseUint(line[i+2:i+4], 16, 8)
					cur.WriteByte(byte(v))
					i += 4
					continue
				}
				if ch == '\\' && i+1 < len(line) {
					i++
					ch = map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'a': '\a'}[line[i]]
					if ch == 0 {
						ch = line[i]
					}
				}
				cur.WriteByte(ch)
				i++
			}
		case '\'':
			i++
			for {
				if i >= len(line) {
					return nil, errUnbalanced
				}
				if line[i] == '\'' {
					i++
					break
				}
				if line[i] == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
				}
				cur.WriteByte(line[i])
				i++
			}
		default:
			for i < len(line) && !isSpace(line[i]) && line[i] != '"' && line[i] != '\'' {
				cur.WriteByte(line[i])
				i++
			}
			args = append(args, cur.String())
			continue
		}
		// A closing quote must be followed by a space or the end.
		if i < len(line) && !isSpace(line[i]) {
			return nil, errUnbalanced
		}
		args = append(args, cur.String())
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

func isHex(b byte) bool {
	return ('0' <= b && b <= '9') || ('a' <= b && b <= 'f') || ('A' <= b && b <= 'F')
}

// Apply sets each directive into cfg, stopping at the first unknown
// directive or bad value.
func Apply(cfg *Config, lines []Line) error {
	ds := Builtin()
	seen := map[string]bool{}
	for _, l := range lines {
		d := ds.Lookup(l.Name)
		if d == nil || d.Set == nil {
			return fmt.Errorf("line %d: unknown directive %q", l.Line, l.Name)
		}
		v := l.Value
		if d.Repeat && seen[d.Name] {
			v = d.Get(cfg) + " " + v
		}
		seen[d.Name] = true
		if err := d.Set(cfg, v); err != nil {
			return fmt.Errorf("line %d: %s %q: %v", l.Line, l.Name, l.Value, err)
		}
	}
	return nil
}

// LoadFile reads path into cfg.
func LoadFile(path string, cfg *Config) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	lines, err := Parse(f)
	if err == nil {
		err = Apply(cfg, lines)
	}
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// RewriteFile rewrites the config file at path so that it sets cfg,
// as CONFIG REWRITE does in Redis: comments, blank lines and their order
// stay; each directive's first line gets its value from cfg and later lines
// of the same directive go; directives the file does not name and whose
// value differs from the default are appended. The file is replaced
// atomically (written beside it, synced, renamed); a missing file is
// created.
func RewriteFile(path string, cfg *Config) error {
	ds := Builtin()
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// Parse says which lines are directives; the others are kept
	// as they are.
	parsed, err := Parse(bytes.NewReader(old))
	if err != nil {
		return err
	}
	directiveAt := map[int]string{}
	for _, l := range parsed {
		directiveAt[l.Line] = l.Name
	}
	var out, lines []string
	if text := strings.TrimSuffix(string(old), "\n"); text != "" {
		lines = strings.Split(text, "\n")
	}
	done := map[string]bool{}
	line := func(d *Directive) (string, bool) {
		v := d.Get(cfg)
		if d.Words {
			return d.Name + " " + v, v != ""
		}
		return d.Name + " " + configValue(v), true
	}
	for n, text := range lines {
		d := ds.Lookup(directiveAt[n+1])
		if d != nil && d.AliasOf != "" {
			d = ds.Lookup(d.AliasOf)
		}
		switch {
		case d == nil || d.Set == nil:
			out = append(out, text)
		case !done[d.Name]:
			done[d.Name] = true
			if l, ok := line(d); ok {
				out = append(out, l)
			}
		}
	}
	def := Default()
	added := false
	for _, d := range ds.All() {
		if d.Set == nil || d.AliasOf != "" || done[d.Name] || d.Get(cfg) == d.Get(&def) {
			continue
		}
		l, ok := line(d)
		if !ok {
			continue
		}
		if !added {
			out = append(out, "# Generated by CONFIG REWRITE")
			added = true
		}
		out = append(out, l)
	}
	return replaceFile(path, []byte(strings.Join(out, "\n")+"\n"))
}

// configValue writes v so that Parse reads it back: bare when it is
// one word of printable characters, else in double quotes with splitArgs's
// escapes.
func configValue(v string) string {
	bare := v != ""
	for i := 0; bare && i < len(v); i++ {
		bare = v[i] > ' ' && v[i] < 0x7f && v[i] != '"' && v[i] != '\'' && v[i] != '\\'
	}
	if bare {
		return v
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < ' ' || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// replaceFile writes data to path through a file beside it, synced and
// renamed over path, keeping path's permissions when it exists.
func replaceFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp := path + ".rewrite.tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
