//go:build unix

package main

import (
	"log"
	"syscall"

	"github.com/limitdb/limitdb/config"
)

// reservedFDs are the descriptors limitdb needs beside its clients:
// listeners, snapshot files, the event loops' own.
const reservedFDs = 32

// adjustOpenFiles makes room for maxclients connections, as Redis does at
// start: it raises the soft limit on open files up to the hard one if it
// must, and if that is still too few, lowers maxclients to what fits and
// says so, so that accept never runs out of descriptors at maxclients.
func adjustOpenFiles(cfg *config.Config, logger *log.Logger) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	want := uint64(cfg.MaxClients) + reservedFDs
	if lim.Cur >= want {
		return
	}
	raised := lim
	raised.Cur = min(want, lim.Max)
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
		lim = raised
	}
	if lim.Cur >= want {
		return
	}
	fit := int(lim.Cur) - reservedFDs
	if fit < 1 {
		fit = 1
	}
	logger.Printf("WARNING: only %d open files allowed (ulimit -n, hard limit %d): maxclients lowered from %d to %d. Raise the limit to serve more clients.",
		lim.Cur, lim.Max, cfg.MaxClients, fit)
	cfg.MaxClients = fit
}
