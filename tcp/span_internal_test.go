package tcp

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// A payload that spans views is found where it lies, cut at any offset and
// length, and walked view by view in order, the bytes being the payload's.
func TestSpanCutsAndWalksAPayloadAcrossViews(t *testing.T) {
	all := make([]byte, 100)
	for i := range all {
		all[i] = byte(i)
	}
	var b buffer.Buffer
	for _, cut := range [][2]int{{0, 20}, {20, 21}, {21, 60}, {60, 100}} { // header, then three views
		v := buffer.NewViewWithData(all[cut[0]:cut[1]])
		defer v.Release()
		b.Append(v.Clone()) // shared: Append links it rather than filling the view before
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: b})
	defer pkt.DecRef()
	pkt.TransportHeader().Consume(20)
	whole, ok := payloadInPlace(pkt, 80)
	if !ok {
		t.Fatal("payload not found")
	}
	n := 0
	whole.each(func(*buffer.View, int, []byte) { n++ })
	if n != 3 {
		t.Fatalf("the payload lies in %d views, want 3", n)
	}
	if _, ok := payloadInPlace(pkt, 81); ok {
		t.Fatal("a payload longer than the packet was found")
	}
	for skip := 0; skip <= 80; skip++ {
		for n := 0; n <= 80-skip; n += 7 {
			s := whole.cut(skip, n)
			var got []byte
			views := 0
			s.each(func(v *buffer.View, off int, p []byte) {
				views++
				if !bytes.Equal(v.AsSlice()[off:off+len(p)], p) {
					t.Fatalf("cut(%d, %d): a part is not at its offset in its view", skip, n)
				}
				got = append(got, p...)
			})
			if s.n != n || !bytes.Equal(got, all[20+skip:20+skip+n]) {
				t.Fatalf("cut(%d, %d): %d bytes %v, want %v", skip, n, s.n, got, all[20+skip:20+skip+n])
			}
			if n > 0 && views > 3 {
				t.Fatalf("cut(%d, %d): %d views", skip, n, views)
			}
		}
	}
}
