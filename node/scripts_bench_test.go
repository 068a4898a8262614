package node

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/benchcpu"
	"github.com/limitdb/limitdb/internal/libscripts"
	"github.com/tidwall/redcon"
)

// BenchmarkPipelineScripts is bench/scripts.sh's load through the
// connection loop, as BenchmarkPipeline runs commands: EVALSHA of each
// library script limitdb runs natively, by the text its library sends and
// with scripts.sh's arguments, 16 to a pipeline on 100k random keys.
// CL.THROTTLE under the same load is the ceiling.
//
//	go test -run NONE -bench PipelineScripts -benchmem -cpu 1 ./node/
//
// rate-limiter-flexible's text comes from tests/clients/node/node_modules
// (npm ci there); without it that case is skipped.
func BenchmarkPipelineScripts(b *testing.B) {
	for _, load := range libscripts.NativeLoads() {
		b.Run(load.Name, func(b *testing.B) {
			n := New(config.Default(), engine.New(clock.Real(), 0), nil)
			cmd := func(key string) []string { return append([]string{"CL.THROTTLE", key}, load.Args...) }
			if load.Body != nil {
				body := load.Body(b)
				var out bytes.Buffer
				req := redcon.AppendBulkString(redcon.AppendBulkString(redcon.AppendArray(nil, 3), "SCRIPT"), "LOAD")
				req = redcon.AppendBulkString(req, body)
				if err := streamTo(n, &batchReader{batches: [][]byte{req}, reads: 1}, &out); err != io.EOF {
					b.Fatal(err)
				}
				sum := sha1.Sum([]byte(body))
				sha := hex.EncodeToString(sum[:])
				if !strings.Contains(out.String(), sha) {
					b.Fatalf("SCRIPT LOAD: %q", out.String())
				}
				args := load.Args
				cmd = func(key string) []string { return append([]string{"EVALSHA", sha, "1", key}, args...) }
			}
			// 16k pipelines, 256k commands: most of the 100k keys, each
			// present after the first pass, as after a round of scripts.sh.
			var batches [][]byte
			key := randomKeys(100_000)
			for range 16 {
				batches = append(batches, pipelines(16, key, cmd)...)
			}
			var out bytes.Buffer
			if err := streamTo(n, &batchReader{batches: batches, reads: len(batches)}, &out); err != io.EOF {
				b.Fatal(err)
			}
			if m := regexp.MustCompile("(^|\n)-[A-Z].*").Find(out.Bytes()); m != nil { // not a bulk "-1"
				b.Fatalf("error reply: %.80q", m)
			}
			rd := &batchReader{batches: batches, reads: (b.N + 15) / 16}
			b.ReportAllocs()
			b.ResetTimer()
			defer benchcpu.Report(b)()
			if err := streamTo(n, rd, io.Discard); err != io.EOF {
				b.Fatal(err)
			}
		})
	}
}
