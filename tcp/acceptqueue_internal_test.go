package tcp

import "testing"

// Accept takes the oldest waiting connection without moving the others: a
// listener with a full backlog does not walk it per connection accepted.
// Counted by where each waiting connection's slot is, so a queue that
// shifts its entries down shows every shift.
func TestAcceptMovesNoWaitingConnection(t *testing.T) {
	const n = 1024
	var a acceptQueue
	eps := make([]*endpoint, n)
	index := make(map[*endpoint]int, n)
	for i := range eps {
		eps[i] = &endpoint{}
		index[eps[i]] = i
	}
	slots := func() map[*endpoint]**endpoint {
		m := map[*endpoint]**endpoint{}
		for i := a.head; i < len(a.q); i++ {
			m[a.q[i]] = &a.q[i]
		}
		return m
	}
	moves := 0
	// A full backlog accepted one by one, in order.
	for _, e := range eps {
		a.push(e)
	}
	for i := range n {
		before := slots()
		if got := a.pop(); got != eps[i] {
			t.Fatalf("accept %d took endpoint %d, want the oldest", i, index[got])
		}
		for e, at := range slots() {
			if before[e] != at {
				moves++
			}
		}
	}
	if a.len() != 0 || moves > n {
		t.Fatalf("%d accepts of a %d-deep queue moved waiting connections %d times (left %d), want at most %d", n, n, moves, a.len(), n)
	}
}
