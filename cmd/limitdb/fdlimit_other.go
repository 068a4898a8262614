//go:build !unix

package main

import (
	"log"

	"github.com/limitdb/limitdb/config"
)

// adjustOpenFiles does nothing where there is no RLIMIT_NOFILE.
func adjustOpenFiles(*config.Config, *log.Logger) {}
