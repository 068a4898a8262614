//go:build !unix

package command

import "strings"

// infoCPU has nothing to report where getrusage does not exist.
func infoCPU(_ *Server, _ *strings.Builder) {}
