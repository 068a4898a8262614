package shard

import (
	"reflect"
	"unsafe"
)

// The shard's arrays (index and arena of values and keys) hold no Go
// pointers, since V must hold none (engine's entries do not). Such arrays are
// allocated outside the Go heap (anonymous mmap on Unix, see
// storage_unix.go), for two reasons: resident memory follows the keyspace
// exactly (a freed array goes back to the OS at once, untouched capacity
// costs nothing), and the garbage collector's heap goal, which is a multiple
// of the live heap, does not count the keyspace, so per-request garbage
// elsewhere in the server is collected against a small heap instead of
// growing resident memory by a fraction of the keyspace.
//
// Arrays of types with pointers, and arrays under mmapMin bytes (a small
// shard's arrays, where a page per array would waste more than it saves),
// use ordinary Go slices.

// mmapMin is the size from which a pointer-free array leaves the heap.
const mmapMin = 4 << 10

// flat reports whether T can live outside the Go heap. It walks T's type
// each call: arrays are made when a table grows, never per request.
func flat[T any]() bool {
	t := reflect.TypeFor[T]()
	return offHeap && t.Size() > 0 && t.Size() <= 4096 && pointerFree(t)
}

func pointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFree(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !pointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// makeArray returns a zeroed slice of length n and capacity at least c.
func makeArray[T any](n, c int) []T {
	if c < n {
		c = n
	}
	if c == 0 {
		return nil
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	if c*size < mmapMin || !flat[T]() {
		return make([]T, n, c)
	}
	mem := mapMemory(c * size)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)/size)[:n]
}

// freeArray gives an array from makeArray back; s must not be used after.
func freeArray[T any](s []T) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if cap(s)*size < mmapMin || !flat[T]() {
		return
	}
	unmapMemory(unsafe.Pointer(unsafe.SliceData(s[:1])), cap(s)*size)
}

// appendArray appends v to s, moving s to a larger array when it is full.
// Arrays from makeArray must only ever grow through it (a plain append
// could move an off-heap array onto the heap behind freeArray's back).
func appendArray[T any](s []T, v ...T) []T {
	if len(s)+len(v) > cap(s) {
		next := makeArray[T](len(s), max(2*cap(s), len(s)+len(v), 64))
		copy(next, s)
		freeArray(s)
		s = next
	}
	return append(s, v...)
}
