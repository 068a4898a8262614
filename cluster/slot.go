// Package cluster holds what a Redis Cluster's members share: the
// key-to-slot function the specification fixes, the topology (members,
// slot owners, epochs), the consensus that keeps every member's copy of it
// the same (consensus.go, on hashicorp/raft), and a node's membership
// (member.go), which calls the other members' client ports. Of the
// project it imports only the clock and the wire format (resp); it knows
// nothing of the commands or the keyspace.
package cluster

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// crcTable is CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0),
// the checksum the cluster specification names.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// CRC16 is the XMODEM checksum of b.
func CRC16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

// Slot is the hash slot of key: CRC16 of the key modulo 16384, or of its
// hash tag when the key has one. The tag is what lies between the first
// '{' and the first '}' after it, if that is not empty; "{}" or an
// unclosed '{' leaves the whole key hashed, as the specification says.
func Slot(key []byte) int {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return int(CRC16(key) & (Slots - 1))
			}
		}
		break
	}
	return int(CRC16(key) & (Slots - 1))
}
