package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"

	"github.com/limitdb/limitdb/engine"
)

// DumpVersion is the version of the DUMP payload (doc.go) this build writes and
// reads.
const DumpVersion = 1

var crcECMA = crc64.MakeTable(crc64.ECMA)

// dumpTrailer is the version and checksum after the entry.
const dumpTrailer = 2 + 8

var (
	// ErrDumpChecksum is a payload too short, of another version, or whose
	// checksum does not match: truncated, corrupt or not limitdb's.
	ErrDumpChecksum = errors.New("dump: payload version or checksum are wrong")
	// ErrDumpFormat is a payload whose checksum matches but whose entry
	// does not decode.
	ErrDumpFormat = errors.New("dump: bad data format")
)

// AppendDump appends ent's DUMP payload to b. ent's Ext state must not
// change during the call (call it under the key's shard lock).
func AppendDump(b []byte, ent engine.Entry) ([]byte, error) {
	start := len(b)
	ent.Expire = 0
	b, err := ent.AppendBinary(b)
	if err != nil {
		return nil, fmt.Errorf("dump: %w", err)
	}
	b = binary.LittleEndian.AppendUint16(b, DumpVersion)
	return binary.LittleEndian.AppendUint64(b, crc64.Checksum(b[start:], crcECMA)), nil
}

// ParseDump verifies a DUMP payload and decodes its entry, whose Expire is
// 0. It answers ErrDumpChecksum or ErrDumpFormat (wrapped) for a payload it
// refuses.
func ParseDump(p []byte) (engine.Entry, error) {
	if len(p) < 1+dumpTrailer {
		return engine.Entry{}, fmt.Errorf("%w: %d bytes is too short", ErrDumpChecksum, len(p))
	}
	body := p[:len(p)-8]
	if v := binary.LittleEndian.Uint16(body[len(body)-2:]); v != DumpVersion {
		return engine.Entry{}, fmt.Errorf("%w: version %d (this build reads %d)", ErrDumpChecksum, v, DumpVersion)
	}
	if got, want := crc64.Checksum(body, crcECMA), binary.LittleEndian.Uint64(p[len(p)-8:]); got != want {
		return engine.Entry{}, fmt.Errorf("%w: crc mismatch (payload says %016x, content hashes to %016x)", ErrDumpChecksum, want, got)
	}
	entry := body[:len(body)-2]
	ent, err := DecodeEntry(entry)
	if err != nil {
		return engine.Entry{}, fmt.Errorf("%w: %v", ErrDumpFormat, err)
	}
	ent.Expire = 0
	return ent, nil
}
