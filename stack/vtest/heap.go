package vtest

import "runtime"

// LiveHeap is the heap in use after two collections: what the live objects
// hold, the figure a per-connection memory bound is checked against.
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
