package rtxq

import "testing"

func TestSACKOfTheDataCoversTheSegmentCarryingTheFIN(t *testing.T) {
	// Segments 0-2 carry data, segment 3 data and the FIN, so it ends one
	// offset past its data. Segment 0 is lost. A receiver reports the data it
	// holds, [1000, 3999): the block must mark segment 3 SACKed, or the
	// transfer's last segment never counts as delivered.
	q := New(100)
	sendN(t, q, 0, 3, 0)
	if err := q.Push(3000, 4000, 0, true); err != nil { // 999 bytes and the FIN
		t.Fatal(err)
	}
	r := q.OnAck(0, []Range{{1000, 3999}}, 20*ms)
	if r.NewlySacked != 3000 || q.SackedBytes() != 3000 {
		t.Fatalf("newly SACKed %d, SACKed %d; want 3000 (segments 1-3, FIN included)", r.NewlySacked, q.SackedBytes())
	}
	if seg, _ := q.Seg(3000); !seg.Sacked {
		t.Fatal("the segment carrying the FIN is not SACKed")
	}
	check(t, q)
}

func TestBlockShortOfTheDataLeavesTheFINSegmentUnSACKed(t *testing.T) {
	// A block that stops inside the data marks nothing, and a block ending
	// at a bare FIN's offset never marks the FIN.
	q := New(100)
	sendN(t, q, 0, 1, 0)
	if err := q.Push(1000, 2000, 0, true); err != nil {
		t.Fatal(err)
	}
	q.OnAck(0, []Range{{1000, 1998}}, 20*ms)
	if q.SackedBytes() != 0 {
		t.Fatalf("a block inside the data SACKed %d bytes", q.SackedBytes())
	}
	check(t, q)

	bare := New(100)
	sendN(t, bare, 0, 2, 0)
	if err := bare.Push(2000, 2001, 0, true); err != nil { // a bare FIN
		t.Fatal(err)
	}
	bare.OnAck(0, []Range{{1000, 2000}}, 20*ms)
	if seg, _ := bare.Seg(2000); seg.Sacked {
		t.Fatal("a block ending below a bare FIN marked the FIN SACKed")
	}
	check(t, bare)
}
