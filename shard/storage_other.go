//go:build !unix

package shard

import "unsafe"

const offHeap = false

func mapMemory(n int) []byte          { return make([]byte, n) }
func unmapMemory(unsafe.Pointer, int) {}
