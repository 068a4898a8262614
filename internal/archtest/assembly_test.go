package archtest

import (
	"go/ast"
	"testing"
)

// TestNodeEmbedsNoCommandLayer: the assembly holds the command layer in a
// named field, so the command layer's methods never become node.Node's API
// by promotion.
func TestNodeEmbedsNoCommandLayer(t *testing.T) {
	p := load(t)["node"]
	if p == nil {
		t.Fatal("no package node")
	}
	for _, name := range sorted(p.files) {
		f := p.files[name]
		cmd := importName(f, module+"command")
		if cmd == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				if len(field.Names) > 0 {
					continue
				}
				typ := field.Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if sel, ok := typ.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == cmd {
						t.Errorf("node/%s:%d: a struct embeds %s.%s", name, p.fset.Position(field.Pos()).Line, cmd, sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
}
