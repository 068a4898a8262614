package resp

import (
	"strings"
	"sync/atomic"
)

// memState is the server's maxmemory bookkeeping.
type memState struct {
	evicted atomic.Int64
}

func infoMaxMemory(s *Server, b *strings.Builder) {
	cfg := s.Config()
	total, live := s.eng.MemoryBytes()
	infoLine(b, "used_memory_dataset", live)
	infoLine(b, "used_memory_keyspace", total)
	infoLine(b, "maxmemory", cfg.MaxMemory)
	infoLine(b, "maxmemory_human", humanBytes(uint64(cfg.MaxMemory)))
	infoLine(b, "maxmemory_policy", cfg.MaxMemoryPolicy)
}
