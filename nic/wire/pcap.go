package wire

import (
	"encoding/binary"
	"io"
)

// LinkTypeRaw is the pcap link type of bare IP packets (LINKTYPE_RAW).
const LinkTypeRaw = 101

// pcapWriter writes the classic pcap format with nanosecond timestamps
// (magic 0xa1b23c4d), one record per frame.
type pcapWriter struct {
	w   io.Writer
	err error
}

// Pcap starts a capture of side's traffic to out: every frame the side's
// endpoint sends (when the wire takes it) and every frame delivered to it,
// stamped with the wire clock's Now. It writes the file header at once and
// returns its error; a later write error stops the capture. A nil out stops
// it too.
func (w *Wire) Pcap(side Side, out io.Writer) error {
	if side != SideA && side != SideB {
		return errorf("pcap side %d is neither SideA nor SideB", side)
	}
	if out == nil {
		w.mu.Lock()
		w.pcaps[side] = nil
		w.mu.Unlock()
		return nil
	}
	var hdr [24]byte
	binary.LittleEndian.PutUint32(hdr[0:], 0xa1b23c4d)
	binary.LittleEndian.PutUint16(hdr[4:], 2)
	binary.LittleEndian.PutUint16(hdr[6:], 4)
	binary.LittleEndian.PutUint32(hdr[16:], 262144)
	binary.LittleEndian.PutUint32(hdr[20:], LinkTypeRaw)
	if _, err := out.Write(hdr[:]); err != nil {
		return err
	}
	w.mu.Lock()
	w.pcaps[side] = &pcapWriter{w: out}
	w.mu.Unlock()
	return nil
}

func (w *Wire) pcapLocked(side Side, frame []byte) {
	p := w.pcaps[side]
	if p == nil || p.err != nil {
		return
	}
	ts := w.clk.Now()
	var rec [16]byte
	binary.LittleEndian.PutUint32(rec[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(rec[4:], uint32(ts.Nanosecond()))
	binary.LittleEndian.PutUint32(rec[8:], uint32(len(frame)))
	binary.LittleEndian.PutUint32(rec[12:], uint32(len(frame)))
	if _, p.err = p.w.Write(rec[:]); p.err == nil {
		_, p.err = p.w.Write(frame)
	}
}
