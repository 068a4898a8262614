//go:build unix

package shard

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

const offHeap = true

var pageSize = os.Getpagesize()

// mapMemory returns n bytes (rounded up to whole pages) of zeroed anonymous
// memory outside the Go heap.
func mapMemory(n int) []byte {
	n = (n + pageSize - 1) &^ (pageSize - 1)
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		// Like make, running out of memory is fatal.
		panic(fmt.Sprintf("shard: mmap %d bytes: %v", n, err))
	}
	return b
}

// unmapMemory frees the mapping that starts at p and holds n bytes.
func unmapMemory(p unsafe.Pointer, n int) {
	n = (n + pageSize - 1) &^ (pageSize - 1)
	if err := syscall.Munmap(unsafe.Slice((*byte)(p), n)); err != nil {
		panic(fmt.Sprintf("shard: munmap: %v", err))
	}
}
