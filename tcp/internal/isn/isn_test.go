package isn

import (
	"testing"
	"time"
)

func tuple(sport uint16) Tuple {
	t := Tuple{SrcPort: sport, DstPort: 80}
	t.SrcAddr[15], t.DstAddr[15] = 1, 2
	return t
}

func TestISNRisesByOnePer4Microseconds(t *testing.T) {
	g := New([16]byte{1, 2, 3})
	id := tuple(1000)
	a := g.ISN(id, time.Second)
	b := g.ISN(id, time.Second+400*time.Microsecond)
	if b-a != 100 {
		t.Fatalf("ISN rose by %d over 400µs, want 100", b-a)
	}
	if g.ISN(id, time.Second+3*time.Microsecond) != a {
		t.Fatal("ISN changed within one 4µs tick")
	}
}

func TestISNDependsOnEveryTupleFieldAndTheSecret(t *testing.T) {
	g := New([16]byte{9})
	base := tuple(1000)
	ref := g.ISN(base, 0)
	vary := []func(*Tuple){
		func(t *Tuple) { t.SrcPort++ },
		func(t *Tuple) { t.DstPort++ },
		func(t *Tuple) { t.SrcAddr[0] ^= 1 },
		func(t *Tuple) { t.DstAddr[15] ^= 1 },
	}
	for i, v := range vary {
		id := base
		v(&id)
		if g.ISN(id, 0) == ref {
			t.Errorf("change %d left the ISN equal", i)
		}
	}
	if New([16]byte{10}).ISN(base, 0) == ref {
		t.Error("another secret gave the same ISN")
	}
	if g.ISN(base, 0) != ref {
		t.Error("ISN not a function of its inputs")
	}
}

func TestISNsOfManyTuplesSpreadOverTheSpace(t *testing.T) {
	g := New([16]byte{7})
	var buckets [16]int
	for p := 0; p < 16000; p++ {
		buckets[g.ISN(tuple(uint16(p)), 0)>>28]++
	}
	for i, n := range buckets {
		if n < 800 || n > 1200 {
			t.Fatalf("bucket %d holds %d of 16000: not spread", i, n)
		}
	}
}
