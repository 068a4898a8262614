//go:build !unix

package admin

import (
	"strings"

	"github.com/limitdb/limitdb/engine"
)

// infoCPU has nothing to report where getrusage does not exist.
func infoCPU(_ *engine.Engine, _ *strings.Builder) {}
