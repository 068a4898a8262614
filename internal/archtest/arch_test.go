package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/limitdb/limitdb/"

// layers orders the project's packages: a package imports only packages of
// lower layers, so imports flow one way. A new package must be placed here.
var layers = [][]string{
	// The wire format, the clock, pure helpers and the storage table.
	{"resp", "clock", "acl", "engine/limit", "engine/internal/wide", "shard", "internal/benchcpu", "internal/archtest", "internal/testlog", "internal/libscripts", "internal/redisarg", "analytics"},
	// Pure algorithms; the configuration; the transport; the cluster's
	// topology and consensus; the Go client, whose near cache takes a clock.
	{"client", "engine/gcra", "engine/bucket", "engine/window", "config", "server", "cluster",

		"engine/calendar",

		"engine/lease",
	},
	// The keyspace.
	{"engine"},
	// What builds on the keyspace without the protocol.
	{"persistence", "policy", "engine/enginetest", "httplimit"},
	// The change stream: replicas and the append-only file.
	{"replication", "scripting", "rls", "region"},
	// The native twins of library scripts, which the command layer runs.
	{"scripting/twins"},
	// The command layer's core.
	{"command"},
	// The families of commands, siblings on the core (TestFamiliesAreSiblings).
	{"command/conn", "command/keyspace", "command/ratelimit", "command/envoy", "command/pubsub", "command/monitor", "command/scripts", "command/admin", "command/replicas", "command/clustering", "command/persist", "command/regions", "command/analytics", "internal/commandtest"},
	// The assembly, and the exporters of the command layer's figures.
	{"node", "metrics", "dashboard"},
	// Programs and end-to-end tests.
	{"cmd/limitdb", "examples/http-api", "bench/accuracy", "bench/loadgen", "bench/delayproxy", "bench/rlsload", "bench/repllag", "bench/failoverload", "bench/clusterload", "tests",

		"bench/reservepair",

		"bench/leasebench",

		"bench/nearbench",
	},
}

// only names, for the packages at the edges, every project package they
// may import at all.
var only = map[string][]string{
	"resp":  {},
	"clock": {},
	"acl":   {},
	// Pure data structures: nothing of the project.
	"analytics": {},
	"server":    {"resp", "clock"},
	"cluster":   {"resp", "clock"},
}

// never names, for packages whose layer alone would allow it, project
// packages they must not import: the command layer knows the connection
// it needs (command.Conn), never the transport that provides it.
var never = map[string][]string{
	"command":     {"server", "node"},
	"engine":      {"server", "resp", "config"},
	"replication": {"server", "resp", "config"},
	"policy":      {"server", "resp"},
	"metrics":     {"server", "node"},
	"dashboard":   {"server", "node"},
	"httplimit":   {"server", "resp", "command", "node"},
	"rls":         {"server", "resp", "command", "node"},
	"region":      {"server", "resp", "command", "node", "config"},
	// A twin reaches the server only through twins.Host.
	"scripting/twins": {"command", "server", "node"},
}

// family reports whether dir is a family of commands: a package under
// command/.
func family(dir string) bool { return strings.HasPrefix(dir, "command/") }

// TestFamiliesAreSiblings: a family of commands imports the core and never
// another family, nor the transport or the assembly: what it needs of the
// rest it is handed (command.Env) or asks through a small interface.
func TestFamiliesAreSiblings(t *testing.T) {
	pkgs := load(t)
	for _, dir := range sorted(pkgs) {
		if !family(dir) {
			continue
		}
		for _, imp := range projectImports(pkgs[dir]) {
			if family(imp) || imp == "server" || imp == "node" {
				t.Errorf("family %s imports %s: families import the core, never each other, the transport or the assembly", dir, imp)
			}
		}
	}
}

// pkg is one package's non-test files.
type pkg struct {
	dir   string
	files map[string]*ast.File
	fset  *token.FileSet
}

// load parses every package of the module under root, skipping test files.
func load(t *testing.T) map[string]*pkg {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*pkg{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module (third_party/...), not this one's package
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		p := out[rel]
		if p == nil {
			p = &pkg{dir: rel, files: map[string]*ast.File{}, fset: token.NewFileSet()}
			out[rel] = p
		}
		f, err := parser.ParseFile(p.fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		p.files[filepath.Base(path)] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// tests/ holds only test files; it is a package all the same.
	if _, err := os.Stat(filepath.Join(root, "tests")); err == nil && out["tests"] == nil {
		out["tests"] = &pkg{dir: "tests", files: map[string]*ast.File{}, fset: token.NewFileSet()}
	}
	return out
}

func layerOf() map[string]int {
	m := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			m[p] = i
		}
	}
	return m
}

// TestImportsFlowOneWay: every package has a layer and imports only from
// lower layers; the edge packages import only what they may.
func TestImportsFlowOneWay(t *testing.T) {
	layer := layerOf()
	pkgs := load(t)
	for _, dir := range sorted(pkgs) {
		p := pkgs[dir]
		mine, ok := layer[dir]
		if !ok {
			t.Errorf("package %s has no layer: place it in archtest's layers", dir)
			continue
		}
		for _, imp := range projectImports(p) {
			if allowed, edge := only[dir]; edge && !contains(allowed, imp) {
				t.Errorf("%s imports %s; it may import only %v", dir, imp, allowed)
			}
			if contains(never[dir], imp) {
				t.Errorf("%s imports %s, which it must never import", dir, imp)
			}
			theirs, ok := layer[imp]
			switch {
			case !ok:
				t.Errorf("%s imports %s, which has no layer", dir, imp)
			case theirs >= mine:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must flow down", dir, mine, imp, theirs)
			}
		}
	}
}

func projectImports(p *pkg) []string {
	seen := map[string]bool{}
	for _, f := range p.files {
		for _, is := range f.Imports {
			path, _ := strconv.Unquote(is.Path.Value)
			if rest, ok := strings.CutPrefix(path, module); ok {
				seen[rest] = true
			}
		}
	}
	return sorted(seen)
}

// TestNoInit: no package fills anything from init(); registries are values
// built by constructors.
func TestNoInit(t *testing.T) {
	pkgs := load(t)
	for _, dir := range sorted(pkgs) {
		p := pkgs[dir]
		for _, name := range sorted(p.files) {
			for _, d := range p.files[name].Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
					t.Errorf("%s/%s:%d: func init", dir, name, p.fset.Position(fn.Pos()).Line)
				}
			}
		}
	}
}

// TestNoPackageState: a package-level variable is an error value or a
// table nothing writes: never assigned, incremented, addressed or called
// through a method, anywhere in its package. Two servers in one process
// then share nothing, and tests may run in parallel.
func TestNoPackageState(t *testing.T) {
	pkgs := load(t)
	for _, dir := range sorted(pkgs) {
		p := pkgs[dir]
		vars := map[string]token.Position{}
		for _, f := range p.files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, spec := range gd.Specs {
					for _, n := range spec.(*ast.ValueSpec).Names {
						if n.Name != "_" && !isErrorName(n.Name) {
							vars[n.Name] = p.fset.Position(n.Pos())
						}
					}
				}
			}
		}
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				for _, target := range written(n) {
					id := root(target)
					if id == nil {
						continue
					}
					pos, ok := vars[id.Name]
					// The parser resolves names within one file: another
					// file's package-level variable is left unresolved,
					// while a local of the same name is resolved.
					if ok && (id.Obj == nil || isPackageLevel(id.Obj, f)) {
						t.Errorf("%s: package-level %s is written at %s", pos, id.Name, p.fset.Position(n.Pos()))
					}
				}
				return true
			})
		}
	}
}

// written returns the expressions n writes to.
func written(n ast.Node) []ast.Expr {
	switch n := n.(type) {
	case *ast.AssignStmt:
		if n.Tok != token.DEFINE {
			return n.Lhs
		}
	case *ast.IncDecStmt:
		return []ast.Expr{n.X}
	case *ast.UnaryExpr:
		if n.Op == token.AND {
			return []ast.Expr{n.X}
		}
	case *ast.CallExpr:
		if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && (id.Obj == nil || id.Obj.Kind == ast.Var) {
				return []ast.Expr{sel.X} // a method call may change its receiver
			}
		}
	}
	return nil
}

// root is the variable an expression such as x, x.f, x[i] or *x names.
func root(e ast.Expr) *ast.Ident {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// isPackageLevel reports whether obj is declared at the top of f.
func isPackageLevel(obj *ast.Object, f *ast.File) bool {
	return f.Scope.Lookup(obj.Name) == obj
}

// timeFuncs read the time or wait: only package clock calls them.
var timeFuncs = map[string]bool{"Now": true, "Since": true, "Until": true, "NewTicker": true, "NewTimer": true,
	"After": true, "AfterFunc": true, "Sleep": true, "Tick": true}

// deadlineFiles enforce socket deadlines, which are wall-clock instants:
// they may read the wall clock directly, with the reason.
var deadlineFiles = map[string]string{
	"server/poll_linux.go": "the event loop enforces the read, write and linger deadlines of the sockets it owns",
}

// TestOnlyTheClockReadsTheTime: no package but clock reads the time,
// ticks, sleeps or waits on a timer; everything takes the clock.Clock it
// is given. A socket deadline is the exception: time.Now() inside a
// Set*Deadline call, and the files of deadlineFiles.
func TestOnlyTheClockReadsTheTime(t *testing.T) {
	pkgs := load(t)
	for _, dir := range sorted(pkgs) {
		if dir == "clock" {
			continue
		}
		p := pkgs[dir]
		for _, name := range sorted(p.files) {
			if _, ok := deadlineFiles[dir+"/"+name]; ok {
				continue
			}
			f := p.files[name]
			timePkg := importName(f, "time")
			if timePkg == "" {
				continue
			}
			isTime := func(e ast.Expr) (string, bool) {
				sel, ok := e.(*ast.SelectorExpr)
				if !ok {
					return "", false
				}
				id, ok := sel.X.(*ast.Ident)
				return sel.Sel.Name, ok && id.Name == timePkg && id.Obj == nil && timeFuncs[sel.Sel.Name]
			}
			called := map[ast.Expr]bool{}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Set") && strings.HasSuffix(sel.Sel.Name, "Deadline") {
						return false // a socket deadline may read the wall clock
					}
					if fn, ok := isTime(n.Fun); ok {
						called[n.Fun] = true
						t.Errorf("%s/%s:%d: time.%s: take a clock.Clock instead", dir, name, p.fset.Position(n.Pos()).Line, fn)
					}
				case *ast.SelectorExpr:
					if fn, ok := isTime(n); ok && !called[n] {
						t.Errorf("%s/%s:%d: time.%s as a value: take a clock.Clock instead", dir, name, p.fset.Position(n.Pos()).Line, fn)
					}
				}
				return true
			})
		}
	}
}

// TestOnlyProgramsChooseTheRealClock: clock.Real is referenced only by
// programs (package main: cmd/limitdb, and the load generators and
// examples beside it); every other package takes the clock it is given,
// so that a test can hand the whole server a fake one.
func TestOnlyProgramsChooseTheRealClock(t *testing.T) {
	pkgs := load(t)
	for _, dir := range sorted(pkgs) {
		if dir == "clock" {
			continue
		}
		p := pkgs[dir]
		for _, name := range sorted(p.files) {
			f := p.files[name]
			clk := importName(f, module+"clock")
			if clk == "" || f.Name.Name == "main" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Real" {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == clk && id.Obj == nil {
					t.Errorf("%s/%s:%d: clock.Real outside a program: take the clock you are given; only cmd/ (and the other main packages) choose the real one",
						dir, name, p.fset.Position(sel.Pos()).Line)
				}
				return true
			})
		}
	}
}

// importName is the name file f uses for the package at path, "" if it
// does not import it.
func importName(f *ast.File, path string) string {
	for _, is := range f.Imports {
		if p, _ := strconv.Unquote(is.Path.Value); p == path {
			if is.Name != nil {
				return is.Name.Name
			}
			return path[strings.LastIndex(path, "/")+1:]
		}
	}
	return ""
}

func isErrorName(name string) bool {
	return strings.HasPrefix(name, "err") || strings.HasPrefix(name, "Err")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sorted[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
