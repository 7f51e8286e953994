package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// readPcap parses the classic pcap format independently of the writer: it
// accepts either byte order and either timestamp resolution.
func readPcap(t *testing.T, b []byte) (linkType uint32, pkts [][]byte, ts []time.Time) {
	t.Helper()
	if len(b) < 24 {
		t.Fatalf("pcap of %d bytes", len(b))
	}
	var bo binary.ByteOrder = binary.LittleEndian
	nano := false
	switch binary.LittleEndian.Uint32(b) {
	case 0xa1b2c3d4:
	case 0xa1b23c4d:
		nano = true
	default:
		bo = binary.BigEndian
		switch binary.BigEndian.Uint32(b) {
		case 0xa1b2c3d4:
		case 0xa1b23c4d:
			nano = true
		default:
			t.Fatalf("bad pcap magic %x", b[:4])
		}
	}
	if bo.Uint16(b[4:]) != 2 || bo.Uint16(b[6:]) != 4 {
		t.Fatalf("pcap version %d.%d", bo.Uint16(b[4:]), bo.Uint16(b[6:]))
	}
	linkType = bo.Uint32(b[20:])
	b = b[24:]
	for len(b) > 0 {
		if len(b) < 16 {
			t.Fatalf("truncated record header")
		}
		sec, frac, incl, orig := bo.Uint32(b), bo.Uint32(b[4:]), bo.Uint32(b[8:]), bo.Uint32(b[12:])
		if incl != orig || int(incl) > len(b)-16 {
			t.Fatalf("record lengths %d/%d with %d bytes left", incl, orig, len(b)-16)
		}
		if !nano {
			frac *= 1000
		}
		ts = append(ts, time.Unix(int64(sec), int64(frac)).UTC())
		pkts = append(pkts, b[16:16+incl])
		b = b[16+incl:]
	}
	return linkType, pkts, ts
}

func TestPcapRecordsEachSidesFramesAsRawIP(t *testing.T) {
	r := newRig(t, Config{AtoB: Dir{Delay: time.Millisecond}, BtoA: Dir{Delay: time.Millisecond}})
	var capA, capB bytes.Buffer
	if err := r.w.Pcap(SideA, &capA); err != nil {
		t.Fatal(err)
	}
	if err := r.w.Pcap(SideB, &capB); err != nil {
		t.Fatal(err)
	}
	r.b.onRx = func(x rx) { send(r.w.B(), ack(segID(x.b))) }
	frames := [][]byte{data(1, 100), data(2, 1000)}
	r.sendEvery(t, r.w.A(), 10*time.Millisecond, frames)
	r.drain()

	read := func(name string, buf *bytes.Buffer) ([][]byte, []time.Time) {
		lt, pkts, ts := readPcap(t, buf.Bytes())
		if lt != 101 {
			t.Fatalf("%s: link type %d, want 101 (LINKTYPE_RAW)", name, lt)
		}
		return pkts, ts
	}
	a, ta := read("A", &capA)
	b, tb := read("B", &capB)
	// Side A sees data out, ACK in, data out, ACK in; B sees data in, ACK out.
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("captured %d frames at A and %d at B, want 4 each", len(a), len(b))
	}
	if !bytes.Equal(a[0], frames[0]) || !bytes.Equal(b[0], frames[0]) || !bytes.Equal(a[2], frames[1]) {
		t.Fatal("captured bytes differ from the frames sent")
	}
	if got := tb[0].Sub(ta[0]); got != time.Millisecond {
		t.Fatalf("B captured the first frame %v after A, want the 1 ms delay", got)
	}
	if !ta[0].Equal(epoch) {
		t.Fatalf("first timestamp %v, want the clock's start %v", ta[0], epoch)
	}
}
