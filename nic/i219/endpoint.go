package i219

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netramp/netramp/counters"
	"github.com/netramp/netramp/nic"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// ErrConfig reports a bad Config or Platform field; the message names it.
var ErrConfig = errors.New("i219: bad configuration")

// ErrNotResponding reports a card whose registers read all ones: powered
// down (D3), memory decoding off, or gone from the bus.
var ErrNotResponding = errors.New("i219: card does not respond (registers read 0xFFFFFFFF)")

// Defaults.
const (
	DefaultDescriptors  = 256
	DefaultPollInterval = 100 * time.Microsecond
	DefaultPollBatch    = 64
	DefaultTxHang       = 2 * time.Second
	// TxRetryBudget bounds how long one WritePackets call waits for TX
	// descriptors, shared by all its frames; after it a frame is dropped
	// and counted (no frame waits without bound).
	TxRetryBudget = 500 * time.Microsecond
	txRetryStep   = 50 * time.Microsecond
	statsInterval = 100 * time.Millisecond
	mtu           = 1500
)

// Config tunes the driver. The zero value is valid.
type Config struct {
	// RXDescriptors and TXDescriptors are ring sizes: multiples of 8 (the
	// card requires ring lengths in multiples of 128 bytes), 8 to 4096.
	// 0 means DefaultDescriptors.
	RXDescriptors, TXDescriptors int
	// Counters receives the nic.* counters; nil makes a private registry.
	Counters *counters.Registry
	// PollInterval is the pause between poll passes without an interrupt
	// source, and the interrupt wait's timeout with one; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// PollBatch bounds the RX descriptors reaped per pass; 0 means
	// DefaultPollBatch.
	PollBatch int
	// ManualPoll starts no goroutine: the caller calls Poll.
	ManualPoll bool
	// BusyPoll makes the poll loop (without an interrupt source) yield
	// instead of sleeping between passes: lower latency for a core spent.
	// Go's timers on Linux wake a sleeping poller up to ~1 ms late.
	BusyPoll bool
	// TxHangTimeout is how long TDH may stall with work pending and the link
	// up before the unit is reset. 0 means DefaultTxHang; negative disables.
	TxHangTimeout time.Duration
	// RXChecksumOffload advertises RX checksum offload to the stack. The
	// driver then accepts frames whose checksums the card validated and
	// verifies IPv4 headers and TCP/UDP over IPv4 and IPv6 itself when the
	// card did not. Departure, and why it is off by default: the transport
	// checksum of an IPv4 fragment, or behind IPv6 extension headers, is
	// then verified by nobody (the stack trusts the flag after reassembly).
	RXChecksumOffload bool
}

func (c *Config) fill() error {
	for _, f := range []struct {
		name string
		v    *int
	}{{"RXDescriptors", &c.RXDescriptors}, {"TXDescriptors", &c.TXDescriptors}} {
		if *f.v == 0 {
			*f.v = DefaultDescriptors
		}
		if *f.v < 8 || *f.v > 4096 || *f.v%8 != 0 {
			return fmt.Errorf("%w: %s = %d, want a multiple of 8 in [8, 4096]", ErrConfig, f.name, *f.v)
		}
	}
	if c.Counters == nil {
		c.Counters = counters.NewRegistry()
	}
	if c.PollInterval < 0 {
		return fmt.Errorf("%w: PollInterval = %v, want >= 0", ErrConfig, c.PollInterval)
	}
	if c.PollBatch < 0 {
		return fmt.Errorf("%w: PollBatch = %d, want >= 0", ErrConfig, c.PollBatch)
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.PollBatch == 0 {
		c.PollBatch = DefaultPollBatch
	}
	if c.TxHangTimeout == 0 {
		c.TxHangTimeout = DefaultTxHang
	}
	return nil
}

// Endpoint is the card as a gVisor link endpoint (Ethernet, MTU 1500). It
// implements stack.LinkEndpoint and nic.CreditLink.
type Endpoint struct {
	d     dev
	cfg   Config
	plat  Platform
	st    *stats
	clk   Clock
	spin  func(time.Duration)
	state atomic.Pointer[string]

	txMu sync.Mutex
	tx   txRing

	rxMu    sync.Mutex
	rx      rxRing
	rxOut   []*stack.PacketBuffer // frames reaped by the current pass
	rxProto []tcpip.NetworkProtocolNumber

	waitMu  sync.Mutex
	waiters map[uint64]func()
	nextW   uint64

	mu         sync.RWMutex
	dispatcher stack.NetworkDispatcher
	onClose    func()
	linkAddr   tcpip.LinkAddress

	link       atomic.Bool
	rxPaused   atomic.Bool
	resetting  atomic.Bool  // a unit reset is under way: writers drop
	txFree     atomic.Int32 // tx.free() as of the last change, for TxCredit
	notifySoon atomic.Bool  // a waiter registered while room was free
	lastStats  time.Time
	hangTDH    uint32
	hangSince  time.Time
	hangActive bool

	failed atomic.Pointer[error] // a watchdog reset that failed

	loopMu   sync.Mutex
	stop     chan struct{} // closed to end the current loop
	done     chan struct{} // closed when the current loop has ended
	stopping bool          // stop requested for the current loop
	detached bool          // that request came from Attach(nil)
	closed   atomic.Bool
}

var (
	_ stack.LinkEndpoint = (*Endpoint)(nil)
	_ nic.CreditLink     = (*Endpoint)(nil)
)

// Open identifies the card, resets and initialises it, and (unless
// cfg.ManualPoll) starts the poll loop. The card's PCI ID is read from
// p.Config; unknown IDs fail with ErrUnsupportedDevice. On error the
// platform still belongs to the caller (Open does not call p.Close), and
// bus mastering is left off.
func Open(p Platform, cfg Config) (*Endpoint, error) {
	if p.Regs == nil || p.Config == nil || p.DMA == nil {
		return nil, fmt.Errorf("%w: Platform needs Regs, Config and DMA", ErrConfig)
	}
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	ven, err := p.Config.ReadConfig16(pciVendorID)
	if err != nil {
		return nil, fmt.Errorf("i219: reading PCI vendor ID: %w", err)
	}
	devID, err := p.Config.ReadConfig16(pciDeviceID)
	if err != nil {
		return nil, fmt.Errorf("i219: reading PCI device ID: %w", err)
	}
	v, err := Identify(ven, devID)
	if err != nil {
		return nil, err
	}
	e := &Endpoint{cfg: cfg, plat: p, clk: p.Clock, waiters: map[uint64]func(){}}
	if e.clk == nil {
		e.clk = realClock{}
	}
	if s, ok := e.clk.(interface{ Spin(time.Duration) }); ok {
		e.spin = s.Spin
	} else {
		e.spin = e.clk.Sleep
	}
	if e.st, err = newStats(cfg.Counters); err != nil {
		return nil, err
	}
	e.d = dev{regs: p.Regs, cfg: p.Config, clk: e.clk, variant: v, deviceID: devID, m: newRegMap(v), useIRQ: p.IRQ != nil}

	if e.tx.descRing, err = newDescRing(p.DMA, cfg.TXDescriptors); err != nil {
		return nil, err
	}
	if e.tx.bufs, err = newSlab(p.DMA, cfg.TXDescriptors); err != nil {
		return nil, err
	}
	if e.rx.descRing, err = newDescRing(p.DMA, cfg.RXDescriptors); err != nil {
		return nil, err
	}
	if e.rx.bufs, err = newSlab(p.DMA, cfg.RXDescriptors); err != nil {
		return nil, err
	}

	if err := e.d.setPCICommand(true); err != nil {
		return nil, err
	}
	fail := func(err error) (*Endpoint, error) {
		_ = e.d.setPCICommand(false)
		return nil, err
	}
	if e.d.rd(regSTATUS) == 0xFFFFFFFF {
		return fail(fmt.Errorf("%w: check the device is in D0 and its BAR is mapped", ErrNotResponding))
	}
	if err := e.d.readMAC(); err != nil {
		return fail(err)
	}
	if err := e.d.phyWorkarounds(); err != nil {
		return fail(err)
	}
	if err := e.bringUp(); err != nil {
		return fail(err)
	}
	e.linkAddr = tcpip.LinkAddress(e.d.mac[:])
	e.lastStats = e.clk.Now()
	e.link.Store(e.d.linkUp())
	if !cfg.ManualPoll {
		e.startLoop()
	}
	return e, nil
}

// bringUp resets and initialises the card with empty rings.
func (e *Endpoint) bringUp() error {
	if err := e.d.reset(&e.tx); err != nil {
		return err
	}
	e.tx.reset()
	if err := e.d.initHW(&e.tx, &e.rx); err != nil {
		return err
	}
	e.txFree.Store(int32(e.tx.free()))
	return nil
}

// Err reports why the card stopped working (a failed reset after a TX
// hang), or nil.
func (e *Endpoint) Err() error {
	if p := e.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Variant reports the MAC family found at Open.
func (e *Endpoint) Variant() Variant { return e.d.variant }

// DeviceID reports the PCI device ID found at Open.
func (e *Endpoint) DeviceID() uint16 { return e.d.deviceID }

// PHYID reports the PHY's identifier (registers 2 and 3).
func (e *Endpoint) PHYID() uint32 { return e.d.phyID }

// LinkUp reports the link state as of the last poll.
func (e *Endpoint) LinkUp() bool { return e.link.Load() }

// Counters returns the registry holding the nic.* counters.
func (e *Endpoint) Counters() *counters.Registry { return e.cfg.Counters }

// PauseRX stops (true) or resumes (false) reaping the RX ring. While
// paused the card fills the ring and then counts what it cannot store
// (nic.rx.no-buffer, nic.rx.missed): a way to exercise ring exhaustion on
// real or emulated hardware. TX, link and statistics keep running.
func (e *Endpoint) PauseRX(paused bool) { e.rxPaused.Store(paused) }

// WaitLink polls until the link is up or timeout passes.
func (e *Endpoint) WaitLink(timeout time.Duration) bool {
	deadline := e.clk.Now().Add(timeout)
	for {
		if e.checkLink() {
			return true
		}
		if !e.clk.Now().Before(deadline) {
			return false
		}
		e.clk.Sleep(10 * time.Millisecond)
	}
}

// ---- stack.LinkEndpoint ----

// MTU implements stack.LinkEndpoint.
func (e *Endpoint) MTU() uint32 { return mtu }

// SetMTU implements stack.LinkEndpoint; the MTU is fixed by the 2 KiB buffers.
func (e *Endpoint) SetMTU(uint32) {}

// MaxHeaderLength implements stack.LinkEndpoint.
func (e *Endpoint) MaxHeaderLength() uint16 { return header.EthernetMinimumSize }

// LinkAddress implements stack.LinkEndpoint.
func (e *Endpoint) LinkAddress() tcpip.LinkAddress {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.linkAddr
}

// SetLinkAddress implements stack.LinkEndpoint: it also reprograms RAL0/RAH0
// so the card's filter follows.
func (e *Endpoint) SetLinkAddress(a tcpip.LinkAddress) {
	if len(a) != 6 {
		return
	}
	e.mu.Lock()
	e.linkAddr = a
	e.mu.Unlock()
	e.rxMu.Lock()
	copy(e.d.mac[:], a)
	e.d.setMAC()
	e.rxMu.Unlock()
}

// Capabilities implements stack.LinkEndpoint.
func (e *Endpoint) Capabilities() stack.LinkEndpointCapabilities {
	c := stack.CapabilityResolutionRequired
	if e.cfg.RXChecksumOffload {
		c |= stack.CapabilityRXChecksumOffload
	}
	return c
}

// Attach implements stack.LinkEndpoint. Attach(nil), the NIC's removal,
// asks the poll loop to end (without waiting: the stack calls it holding
// its own lock, which a delivery in progress may need); attaching again
// restarts the loop unless the endpoint is closed or polled manually.
func (e *Endpoint) Attach(d stack.NetworkDispatcher) {
	e.mu.Lock()
	e.dispatcher = d
	e.mu.Unlock()
	if d == nil {
		e.requestStop(true)
	} else if !e.cfg.ManualPoll && !e.closed.Load() {
		e.startLoop()
	}
}

// IsAttached implements stack.LinkEndpoint.
func (e *Endpoint) IsAttached() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.dispatcher != nil
}

// Wait implements stack.LinkEndpoint: it waits for the poll loop to end
// once Stop, Close or Attach(nil) asked it to. After Attach(nil) the wait is
// bounded by one second: gVisor's Stack.Wait calls it holding the stack's
// lock, and a delivery already in progress may be waiting for that lock;
// the loop then ends as soon as the delivery returns (it sees no
// dispatcher and the stop request). netramp's stack.Close never meets the
// bound: it removes the NIC first, whose Close joins the loop unlocked.
func (e *Endpoint) Wait() {
	e.loopMu.Lock()
	done, stopping, detached := e.done, e.stopping, e.detached
	e.loopMu.Unlock()
	if done == nil || !stopping {
		return
	}
	if !detached {
		<-done
		return
	}
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// ARPHardwareType implements stack.LinkEndpoint.
func (e *Endpoint) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareEther }

// AddHeader implements stack.LinkEndpoint (Ethernet II, IEEE 802.3).
func (e *Endpoint) AddHeader(pkt *stack.PacketBuffer) {
	src := pkt.EgressRoute.LocalLinkAddress
	if src == "" {
		src = e.LinkAddress()
	}
	eth := header.Ethernet(pkt.LinkHeader().Push(header.EthernetMinimumSize))
	eth.Encode(&header.EthernetFields{SrcAddr: src, DstAddr: pkt.EgressRoute.RemoteLinkAddress, Type: pkt.NetworkProtocolNumber})
}

// ParseHeader implements stack.LinkEndpoint.
func (e *Endpoint) ParseHeader(pkt *stack.PacketBuffer) bool {
	_, ok := pkt.LinkHeader().Consume(header.EthernetMinimumSize)
	return ok
}

// SetOnCloseAction implements stack.LinkEndpoint.
func (e *Endpoint) SetOnCloseAction(f func()) {
	e.mu.Lock()
	e.onClose = f
	e.mu.Unlock()
}

// Close implements stack.LinkEndpoint: it stops the poll loop, stops the
// card's RX, TX and DMA, and releases the platform.
func (e *Endpoint) Close() {
	if e.closed.Swap(true) {
		return
	}
	e.mu.RLock()
	f := e.onClose
	e.mu.RUnlock()
	if f != nil {
		f()
	}
	e.Stop()
	e.rxMu.Lock()
	e.txMu.Lock()
	e.d.wr(regIMC, icrAll)
	e.d.wr(regRCTL, 0)
	e.d.wr(regTCTL, tctlPSP)
	e.d.wr(regCTRLEXT, e.d.rd(regCTRLEXT)&^ctrlExtDrvLoad)
	_ = e.d.disableMastering()
	_ = e.d.setPCICommand(false)
	if e.plat.Close != nil {
		_ = e.plat.Close()
	}
	e.txMu.Unlock()
	e.rxMu.Unlock()
}

// ---- TX ----

// WritePackets implements stack.LinkWriter. Each frame is copied into the
// next TX buffer. When the ring is full the call reclaims and waits in
// 50 µs steps, within TxRetryBudget shared by the whole batch; a frame
// still without room is dropped and counted (the link behaves like a
// congested wire; TCP recovers, and no small frame queues behind a stall).
func (e *Endpoint) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	if e.closed.Load() {
		return 0, &tcpip.ErrClosedForSend{}
	}
	if e.failed.Load() != nil {
		e.st.txDrops.Add(uint64(pkts.Len()))
		return 0, &tcpip.ErrClosedForSend{}
	}
	var (
		sent, dropped int
		spent         time.Duration
		reclaimed     bool
	)
	if !e.lockTX() {
		e.st.txDrops.Add(uint64(pkts.Len()))
		return 0, &tcpip.ErrNoBufferSpace{}
	}
	for i, pkt := range pkts.AsSlice() {
		if e.closed.Load() {
			// Close has quiesced the card (and may have unmapped it).
			e.st.txDrops.Inc()
			dropped++
			continue
		}
		size := pkt.Size()
		if size > maxFrame {
			e.st.txTooLong.Inc()
			e.st.txDrops.Inc()
			dropped++
			continue
		}
		if e.tx.free() == 0 {
			reclaimed = e.reclaimLocked() > 0 || reclaimed
		}
		if e.tx.free() == 0 {
			// control:i219-retry-budget-per-frame
			e.st.txRingFull.Inc()
			for e.tx.free() == 0 && spent < TxRetryBudget {
				step := min(txRetryStep, TxRetryBudget-spent)
				e.publishLocked() // let the card drain what is queued
				e.txMu.Unlock()
				t0 := e.clk.Now()
				e.spin(step)
				spent += max(e.clk.Now().Sub(t0), step)
				e.st.txRetries.Inc()
				if !e.lockTX() {
					// A unit reset began: drop this frame and the rest.
					rest := uint64(pkts.Len() - i)
					e.st.txDrops.Add(rest)
					dropped += int(rest)
					if reclaimed {
						e.notifyWaiters()
					}
					if sent == 0 {
						return 0, &tcpip.ErrNoBufferSpace{}
					}
					return sent, nil
				}
				if e.closed.Load() {
					break
				}
				reclaimed = e.reclaimLocked() > 0 || reclaimed
			}
			if e.tx.free() == 0 || e.closed.Load() {
				e.st.txDrops.Inc()
				dropped++
				continue
			}
		}
		e.tx.put(pkt.AsSlices())
		sent++
	}
	e.publishLocked()
	e.txMu.Unlock()
	// The caller keeps its references: the frames were copied.
	if reclaimed {
		e.notifyWaiters()
	}
	if dropped > 0 && sent == 0 {
		return 0, &tcpip.ErrNoBufferSpace{}
	}
	return sent, nil
}

// lockTX takes the TX lock unless a unit reset holds it or is about to:
// a reset (tens of milliseconds of register settling) must not become a
// wait in the data path, so the writer drops instead. Ordinary holders
// (reclaim, credit) keep the lock for microseconds; the writer yields
// while they do.
func (e *Endpoint) lockTX() bool {
	// control:i219-writer-waits-for-reset
	for !e.txMu.TryLock() {
		if e.resetting.Load() {
			return false
		}
		runtime.Gosched()
	}
	if e.resetting.Load() {
		e.txMu.Unlock()
		return false
	}
	return true
}

// publishLocked hands the filled descriptors to the card with one TDT
// write per batch: each MMIO write is a bus transaction (and, under a
// hypervisor, an exit), so the tail moves once, not once per frame.
func (e *Endpoint) publishLocked() {
	if e.tx.tail != e.tx.published && !e.closed.Load() {
		e.d.wr(regTDT, uint32(e.tx.tail))
		e.tx.published = e.tx.tail
	}
	e.txFree.Store(int32(e.tx.free()))
}

// reclaimLocked gives back finished TX slots and counts them.
func (e *Endpoint) reclaimLocked() int {
	f, b := e.tx.reclaim()
	e.txFree.Store(int32(e.tx.free()))
	if f > 0 {
		e.st.txFrames.Add(uint64(f))
		e.st.txBytes.Add(uint64(b))
	}
	return f
}

// ---- credit ----

// TxCredit implements nic.CreditLink.
func (e *Endpoint) TxCredit() nic.Credit { return credit{e} }

type credit struct{ e *Endpoint }

// TxFree implements nic.Credit: free TX descriptors, one per frame. It
// reads a mirror updated under the TX lock, so asking never waits.
func (c credit) TxFree() int { return int(c.e.txFree.Load()) }

// NotifyTxFree implements nic.Credit. f runs once, on the reclaim path
// (the poll pass or a writer's reclaim), with no driver lock held. If there
// is room already when f is registered, the next poll pass calls it: a
// reclaim that happened between the caller's TxFree and this call is not a
// lost wake-up.
func (c credit) NotifyTxFree(f func()) (cancel func()) {
	e := c.e
	e.waitMu.Lock()
	id := e.nextW
	e.nextW++
	e.waiters[id] = f
	e.waitMu.Unlock()
	if e.txFree.Load() > 0 {
		e.notifySoon.Store(true)
	}
	return func() {
		e.waitMu.Lock()
		delete(e.waiters, id)
		e.waitMu.Unlock()
	}
}

func (e *Endpoint) notifyWaiters() {
	e.waitMu.Lock()
	if len(e.waiters) == 0 {
		e.waitMu.Unlock()
		return
	}
	fs := make([]func(), 0, len(e.waiters))
	for id, f := range e.waiters {
		fs = append(fs, f)
		delete(e.waiters, id)
	}
	e.waitMu.Unlock()
	for _, f := range fs {
		f()
	}
}
