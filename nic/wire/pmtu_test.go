package wire

import (
	"bytes"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestPathMTUAnswersDFWithFragNeededAndFragmentsTheRest: past PathMTU a
// packet with DF is dropped and its sender hears why after the way back's
// delay, one without is carried in fragments that rebuild it.
func TestPathMTUAnswersDFWithFragNeededAndFragmentsTheRest(t *testing.T) {
	r := newRig(t, Config{AtoB: Dir{Delay: 10 * time.Millisecond, PathMTU: 576}, BtoA: Dir{Delay: 3 * time.Millisecond}})
	df := data(1, 1000)
	ip := header.IPv4(df)
	ip.SetFlagsFragmentOffset(header.IPv4FlagDontFragment, 0)
	ip.SetChecksum(0)
	ip.SetChecksum(^ip.CalculateChecksum())
	plain := data(2, 1000)
	small := data(3, 500)
	r.sendEvery(t, r.w.A(), time.Millisecond, [][]byte{df, plain, small})
	r.drain()

	if len(r.a.got) != 1 {
		t.Fatalf("A got %d frames, want the one fragmentation-needed", len(r.a.got))
	}
	got := r.a.got[0]
	ic := header.ICMPv4(got.b[header.IPv4MinimumSize:])
	if got.at != 3*time.Millisecond || ic.Type() != header.ICMPv4DstUnreachable || ic.Code() != header.ICMPv4FragmentationNeeded || ic.MTU() != 576 {
		t.Fatalf("A got type %d code %d MTU %d at %v, want 3/4/576 at 3ms", ic.Type(), ic.Code(), ic.MTU(), got.at)
	}
	if q := ic[header.ICMPv4MinimumSize:]; !bytes.Equal(q, df[:header.IPv4MinimumSize+8]) {
		t.Fatalf("quote %x, want the datagram's header and 8 bytes %x", q, df[:28])
	}
	if !header.IPv4(got.b).IsChecksumValid() || header.IPv4(got.b).SourceAddress() != addrB || header.IPv4(got.b).DestinationAddress() != addrA {
		t.Fatalf("ICMP's IP header: bad checksum or addresses")
	}

	// B: plain's two fragments (552 and 468 bytes of body), then small whole.
	var body []byte
	var frags int
	for _, f := range r.b.got {
		h := header.IPv4(f.b)
		if len(f.b) > 576 || !h.IsChecksumValid() {
			t.Fatalf("B got %d bytes (checksum valid %v), want at most 576 and valid", len(f.b), h.IsChecksumValid())
		}
		if h.ID() == 2 {
			frags++
			if int(h.FragmentOffset()) != len(body) {
				t.Fatalf("fragment at %d, want %d", h.FragmentOffset(), len(body))
			}
			body = append(body, f.b[h.HeaderLength():]...)
		}
	}
	if frags != 2 || !bytes.Equal(body, plain[header.IPv4MinimumSize:]) {
		t.Fatalf("%d fragments rebuilding %d bytes, want 2 rebuilding the 1020 of the packet", frags, len(body))
	}
	ab, _ := r.w.Stats()
	if ab.DropTooBig != 1 || ab.FragNeeded != 1 || ab.Fragmented != 1 || len(r.b.got) != 3 {
		t.Fatalf("stats %+v and %d frames at B, want 1 dropped, 1 report, 1 fragmented, 3 frames", ab, len(r.b.got))
	}
}
