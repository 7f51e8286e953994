package i219

import "fmt"

// bufSize is the DMA buffer behind every descriptor: RCTL.BSIZE 2048 for RX,
// and the same for TX so one descriptor carries one whole frame.
const bufSize = 2048

// maxFrame is the longest frame (without FCS) that fits one buffer and the
// configured MTU: 1500 bytes of payload and a 14-byte Ethernet header.
const maxFrame = 1514

// slab is a set of fixed-size DMA buffers carved from blocks of at most one
// page, so that an allocator backed by single locked pages can serve it.
type slab struct {
	mem [][]byte
	bus []uint64
}

func newSlab(a DMAAllocator, n int) (*slab, error) {
	s := &slab{mem: make([][]byte, n), bus: make([]uint64, n)}
	const perBlock = 4096 / bufSize
	for i := 0; i < n; i += perBlock {
		blk, err := a.AllocDMA(4096, 4096)
		if err != nil {
			return nil, fmt.Errorf("i219: buffer memory: %w", err)
		}
		if len(blk.Mem) < 4096 {
			return nil, fmt.Errorf("i219: DMA allocator returned %d bytes, want 4096", len(blk.Mem))
		}
		for j := 0; j < perBlock && i+j < n; j++ {
			s.mem[i+j] = blk.Mem[j*bufSize : (j+1)*bufSize : (j+1)*bufSize]
			s.bus[i+j] = blk.Bus + uint64(j*bufSize)
		}
	}
	return s, nil
}

// descRing is descriptor memory shared by both ring kinds.
type descRing struct {
	mem []byte
	bus uint64
	n   int
}

func newDescRing(a DMAAllocator, n int) (descRing, error) {
	size := n * descSize
	blk, err := a.AllocDMA(size, 128)
	if err != nil {
		return descRing{}, fmt.Errorf("i219: descriptor ring of %d: %w", n, err)
	}
	if len(blk.Mem) < size {
		return descRing{}, fmt.Errorf("i219: DMA allocator returned %d bytes, want %d", len(blk.Mem), size)
	}
	clear(blk.Mem[:size])
	return descRing{mem: blk.Mem[:size], bus: blk.Bus, n: n}, nil
}

// txRing is the legacy TX ring. The driver fills at tail (and writes it to
// TDT); the card sends and writes DD back; reclaim, the clean-up step, walks
// head forward over the finished descriptors and gives their slots back.
// One descriptor carries one frame.
type txRing struct {
	descRing
	bufs      *slab
	tail      int // next slot the driver fills
	published int // tail as last written to TDT
	head      int // oldest slot not yet reclaimed
	used      int // slots filled and not yet reclaimed
}

func (r *txRing) desc(i int) txDesc { return txDesc(r.mem[i*descSize : (i+1)*descSize]) }

// free is the number of frames the ring accepts now. One slot stays empty so
// that TDT never catches up with TDH (equal means empty to the card).
func (r *txRing) free() int { return r.n - 1 - r.used }

// put copies one frame into the next slot; the caller publishes the new
// tail to TDT.
func (r *txRing) put(frame [][]byte) {
	i := r.tail
	buf := r.bufs.mem[i]
	n := 0
	for _, s := range frame {
		n += copy(buf[n:], s)
	}
	r.desc(i).set(r.bufs.bus[i], n, txCmdEOP|txCmdIFCS|txCmdRS)
	r.tail = (i + 1) % r.n
	r.used++
}

// reclaim frees the slots the card has finished (DD written back) and
// returns how many, with their byte total.
func (r *txRing) reclaim() (frames, bytes int) {
	for r.used > 0 {
		d := r.desc(r.head)
		if !d.done() {
			break
		}
		bytes += d.length()
		frames++
		r.head = (r.head + 1) % r.n
		r.used--
	}
	return frames, bytes
}

// reset forgets every slot, as after a unit reset (the card restarts at 0).
func (r *txRing) reset() {
	clear(r.mem)
	r.tail, r.head, r.used, r.published = 0, 0, 0, 0
}

// rxRing is the extended RX ring. The card fills from head; the clean-up
// step (Endpoint.pollRX) copies each finished frame out, re-arms the same
// buffer and moves tail (RDT) behind it, so every slot always owns one
// buffer and steady state allocates no DMA memory.
type rxRing struct {
	descRing
	bufs *slab
	head int  // next slot the card will complete
	tail int  // last slot handed to the card (mirrors RDT)
	skip bool // discarding the rest of a frame that spanned buffers
}

func (r *rxRing) desc(i int) rxDesc { return rxDesc(r.mem[i*descSize : (i+1)*descSize]) }

// armAll gives every slot but one to the card and returns the RDT value.
func (r *rxRing) armAll() int {
	for i := 0; i < r.n; i++ {
		r.desc(i).arm(r.bufs.bus[i])
	}
	r.head = 0
	r.tail = r.n - 1
	r.skip = false
	return r.tail
}
