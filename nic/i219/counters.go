package i219

import "github.com/netramp/netramp/counters"

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

func newStats(r *counters.Registry) *stats {
	return &stats{
		rxFrames:      r.MustRegister("nic.rx.frames", "frames received and handed to the stack"),
		rxBytes:       r.MustRegister("nic.rx.bytes", "bytes of frames received and handed to the stack"),
		txFrames:      r.MustRegister("nic.tx.frames", "frames the card reported sent"),
		txBytes:       r.MustRegister("nic.tx.bytes", "bytes of frames the card reported sent"),
		txRingFull:    r.MustRegister("nic.tx.ring-full", "frames that found the TX ring full"),
		txRetries:     r.MustRegister("nic.tx.retries", "short waits for TX descriptors within the per-batch budget"),
		txDrops:       r.MustRegister("nic.tx.drops", "frames dropped on transmit (ring full past the budget, too long, hang reset)"),
		txTooLong:     r.MustRegister("nic.tx.too-long", "frames dropped on transmit because they exceed one buffer"),
		rxErrors:      r.MustRegister("nic.rx.errors", "received frames dropped because the descriptor reported an error"),
		rxTooLong:     r.MustRegister("nic.rx.too-long", "received frames dropped because they spanned more than one buffer"),
		rxMissed:      r.MustRegister("nic.rx.missed", "frames the card missed for lack of FIFO room (MPC)"),
		rxNoBuffer:    r.MustRegister("nic.rx.no-buffer", "times the card found no free RX descriptor (RNBC)"),
		crcErrors:     r.MustRegister("nic.crc-errors", "frames received with a bad CRC (CRCERRS)"),
		linkChanges:   r.MustRegister("nic.link.changes", "link up/down transitions seen"),
		txHangs:       r.MustRegister("nic.tx.hangs", "TX hangs detected (head stalled) and reset"),
		rxCsumOffload: r.MustRegister("nic.rx.csum-offloaded", "received frames whose checksums the card validated"),
		rxUnattached:  r.MustRegister("nic.rx.unattached", "received frames dropped because no stack was attached"),
	}
}
