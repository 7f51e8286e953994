package i219

import (
	"fmt"

	"github.com/netramp/netramp/counters"
)

// stats are the driver's counters, registered under nic.* in the stack's
// registry. The hardware statistics registers clear on read, so the driver
// reads each at a fixed interval and adds the value here; nothing else may
// read them.
type stats struct {
	rxFrames, rxBytes, txFrames, txBytes *counters.Counter
	txRingFull, txRetries, txDrops       *counters.Counter
	txTooLong, rxErrors, rxTooLong       *counters.Counter
	rxMissed, rxNoBuffer, crcErrors      *counters.Counter
	linkChanges, txHangs, rxCsumOffload  *counters.Counter
	rxUnattached                         *counters.Counter
}

// newStats registers the counters; a name already registered with another
// doc is an error (a caller's registry clash), not a panic.
func newStats(r *counters.Registry) (*stats, error) {
	var first error
	reg := func(name, doc string) *counters.Counter {
		c, err := r.Register(name, doc)
		if err != nil && first == nil {
			first = fmt.Errorf("%w: counter %s: %v", ErrConfig, name, err)
		}
		return c
	}
	st := &stats{
		rxFrames:      reg("nic.rx.frames", "frames received and handed to the stack"),
		rxBytes:       reg("nic.rx.bytes", "bytes of frames received and handed to the stack"),
		txFrames:      reg("nic.tx.frames", "frames the card reported sent"),
		txBytes:       reg("nic.tx.bytes", "bytes of frames the card reported sent"),
		txRingFull:    reg("nic.tx.ring-full", "frames that found the TX ring full"),
		txRetries:     reg("nic.tx.retries", "short waits for TX descriptors within the per-batch budget"),
		txDrops:       reg("nic.tx.drops", "frames dropped on transmit (ring full past the budget, too long, hang reset)"),
		txTooLong:     reg("nic.tx.too-long", "frames dropped on transmit because they exceed one buffer"),
		rxErrors:      reg("nic.rx.errors", "received frames dropped because the descriptor reported an error"),
		rxTooLong:     reg("nic.rx.too-long", "received frames dropped because they spanned more than one buffer"),
		rxMissed:      reg("nic.rx.missed", "frames the card missed for lack of FIFO room (MPC)"),
		rxNoBuffer:    reg("nic.rx.no-buffer", "times the card found no free RX descriptor (RNBC)"),
		crcErrors:     reg("nic.crc-errors", "frames received with a bad CRC (CRCERRS)"),
		linkChanges:   reg("nic.link.changes", "link up/down transitions seen"),
		txHangs:       reg("nic.tx.hangs", "TX hangs detected (head stalled) and reset"),
		rxCsumOffload: reg("nic.rx.csum-offloaded", "received frames whose checksums the card validated"),
		rxUnattached:  reg("nic.rx.unattached", "received frames dropped because no stack was attached"),
	}
	return st, first
}
