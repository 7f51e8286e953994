//go:build linux

package i219linux

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/netramp/netramp/nic/i219"
	"golang.org/x/sys/unix"
)

const (
	pageSize     = 4096
	hugePageSize = 2 << 20
)

// pagemapDMA hands out physically contiguous memory for backends without an
// IOMMU: it carves 2 MiB hugepages (contiguous by construction), or, when
// none are reserved, single locked 4 KiB pages. Physical addresses come from
// /proc/self/pagemap (root only: others read zero frame numbers). Locked
// is not pinned: memory compaction may still move a locked 4 KiB page
// unless vm.compact_unevictable_allowed is 0, which is why hugepages come
// first.
type pagemapDMA struct {
	mu      sync.Mutex
	huge    bool
	cur     []byte // current chunk being carved
	curPhys uint64
	used    int
	maps    [][]byte
}

func newPagemapDMA() (*pagemapDMA, error) {
	p := &pagemapDMA{}
	// Probe: one hugepage if the system has any reserved.
	if mem, err := unix.Mmap(-1, 0, hugePageSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB|unix.MAP_POPULATE|unix.MAP_LOCKED); err == nil {
		p.huge = true
		if err := p.adopt(mem); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// adopt makes mem the chunk being carved.
func (p *pagemapDMA) adopt(mem []byte) error {
	p.maps = append(p.maps, mem)
	phys, err := physAddr(mem)
	if err != nil {
		return err
	}
	p.cur, p.curPhys, p.used = mem, phys, 0
	return nil
}

// AllocDMA implements i219.DMAAllocator.
func (p *pagemapDMA) AllocDMA(size, align int) (i219.DMAMemory, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if align <= 0 || align&(align-1) != 0 || align > pageSize {
		return i219.DMAMemory{}, fmt.Errorf("%w: alignment %d, want a power of two up to %d", i219.ErrConfig, align, pageSize)
	}
	limit := pageSize
	if p.huge {
		limit = hugePageSize
	}
	if size <= 0 || size > limit {
		return i219.DMAMemory{}, fmt.Errorf("%w: %d bytes cannot be physically contiguous here (limit %d; reserve hugepages: echo 8 > /proc/sys/vm/nr_hugepages)", ErrDMA, size, limit)
	}
	off := (p.used + align - 1) &^ (align - 1)
	if p.cur == nil || off+size > len(p.cur) {
		var mem []byte
		var err error
		if p.huge {
			mem, err = unix.Mmap(-1, 0, hugePageSize, unix.PROT_READ|unix.PROT_WRITE,
				unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB|unix.MAP_POPULATE|unix.MAP_LOCKED)
		} else {
			mem, err = unix.Mmap(-1, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE,
				unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE|unix.MAP_LOCKED)
		}
		if err != nil {
			return i219.DMAMemory{}, fmt.Errorf("%w: mmap: %v (raise RLIMIT_MEMLOCK or reserve hugepages)", ErrDMA, err)
		}
		if err := p.adopt(mem); err != nil {
			return i219.DMAMemory{}, err
		}
		off = 0
	}
	mem := p.cur[off : off+size : off+size]
	p.used = off + size
	return i219.DMAMemory{Mem: mem, Bus: p.curPhys + uint64(off)}, nil
}

func (p *pagemapDMA) close() {
	for _, m := range p.maps {
		_ = unix.Munmap(m)
	}
	p.maps = nil
}

// physAddr translates the start of mem (page aligned, locked, touched) with
// /proc/self/pagemap: one 64-bit entry per page, bit 63 "present", bits 0-54
// the page frame number.
func physAddr(mem []byte) (uint64, error) {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrDMA, err)
	}
	defer f.Close()
	mem[0] = 0 // make sure the page is present
	va := uint64(uintptr(unsafe.Pointer(&mem[0])))
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(va/pageSize*8)); err != nil {
		return 0, fmt.Errorf("%w: pagemap: %v", ErrDMA, err)
	}
	e := binary.LittleEndian.Uint64(b[:])
	if e&(1<<63) == 0 {
		return 0, fmt.Errorf("%w: page not present in pagemap", ErrDMA)
	}
	pfn := e & (1<<55 - 1)
	if pfn == 0 {
		return 0, fmt.Errorf("%w: pagemap shows no frame numbers (needs CAP_SYS_ADMIN)", ErrNotPermitted)
	}
	return pfn*pageSize + va%pageSize, nil
}
