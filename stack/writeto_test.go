package stack

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	gstack "gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netramp/netramp/tcp"
)

// copyLink is one end of a pipe that gives each frame a buffer of its own,
// as a NIC's receive ring does: no two frames' payloads are contiguous.
type copyLink struct{ *pipe.Endpoint }

func (l copyLink) WritePackets(pkts gstack.PacketBufferList) (int, tcpip.Error) {
	var out gstack.PacketBufferList
	for _, p := range pkts.AsSlice() {
		v := p.ToView() // a copy of the whole frame
		q := gstack.NewPacketBuffer(gstack.PacketBufferOptions{Payload: buffer.MakeWithView(v)})
		q.NetworkProtocolNumber = p.NetworkProtocolNumber
		out.PushBack(q)
	}
	defer out.DecRef()
	return l.Endpoint.WritePackets(out)
}

// copyConnPair is connPair over copyLinks.
func copyConnPair(t *testing.T) (c1, c2 net.Conn) {
	t.Helper()
	la, lb := pipe.New("", "", 1500)
	return connPairOn(t, tcp.Options{}, copyLink{la}, copyLink{lb}, ourDial)
}

// recWriter checks that the bytes it is given are pattern's, in order, and
// records each write's size and where its bytes lay.
type recWriter struct {
	off    int
	bad    int // offset of the first wrong byte, -1 for none
	sizes  []int
	starts map[*byte]bool
	fail   error // returned from the first write when set
}

func newRecWriter() *recWriter { return &recWriter{bad: -1, starts: map[*byte]bool{}} }

func (w *recWriter) Write(b []byte) (int, error) {
	if w.fail != nil {
		return 0, w.fail
	}
	for i, x := range b {
		if x != pattern(w.off+i) && w.bad < 0 {
			w.bad = w.off + i
		}
	}
	w.sizes = append(w.sizes, len(b))
	if len(b) > 0 {
		w.starts[&b[0]] = true
	}
	w.off += len(b)
	return len(b), nil
}

func pattern(i int) byte { return byte(i*7 + i>>11) }

// sendPattern writes n pattern bytes on c in writes of 64 KB, then closes it.
func sendPattern(t *testing.T, c net.Conn, n int) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for off := 0; off < n; {
			k := min(len(buf), n-off)
			for i := range buf[:k] {
				buf[i] = pattern(off + i)
			}
			if _, err := c.Write(buf[:k]); err != nil {
				done <- err
				return
			}
			off += k
		}
		done <- c.Close()
	}()
	return done
}

// copyAll is io.Copy(w, c) checked against the n pattern bytes sent.
func copyAll(t *testing.T, c net.Conn, w *recWriter, n int, sent <-chan error) {
	t.Helper()
	got, err := io.Copy(w, c)
	if err != nil || got != int64(n) {
		t.Fatalf("io.Copy = %d, %v; want %d bytes and a nil error at the FIN", got, err, n)
	}
	if w.bad >= 0 {
		t.Fatalf("byte %d is not the one sent", w.bad)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

// awaitQueued returns once c's receive queue holds n bytes.
func awaitQueued(t *testing.T, c net.Conn, n int) {
	t.Helper()
	ep := c.(*conn).ep
	for end := time.Now().Add(blockedFor); ; time.Sleep(time.Millisecond) {
		if q, _ := ep.GetSockOptInt(tcpip.ReceiveQueueSizeOption); q == n {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the %d bytes did not arrive within %v", n, blockedFor)
		}
	}
}

// queuedBytes is within the initial receive buffer, so one WriteTo step
// takes all of it once it has arrived.
const queuedBytes = 100 << 10

// TestWriteToHandsRunsWhereTheyLie: io.Copy from our conn takes its
// WriteTo, which hands the writer the receive queue's bytes in place. Over
// a pipe, whose frames keep the sender's chunks, a chunk's segments are one
// contiguous run: each goes out in one write, longer than the staging
// buffer, from where it lies (each write from a place of its own, where
// copies would all come from the stage).
func TestWriteToHandsRunsWhereTheyLie(t *testing.T) {
	c1, c2 := connPair(t, tcp.Options{}, ourDial)
	if _, ok := c2.(io.WriterTo); !ok {
		t.Fatal("our conn is not an io.WriterTo")
	}
	sent := sendPattern(t, c1, queuedBytes)
	awaitQueued(t, c2, queuedBytes)
	w := newRecWriter()
	copyAll(t, c2, w, queuedBytes, sent)
	// The sender's 64 KB writes fill a 64 KB chunk and then one of 36 KB.
	if len(w.sizes) != 2 || w.sizes[0] <= writeToStage {
		t.Fatalf("writes %v, want the two chunks' runs", w.sizes)
	}
	if len(w.starts) != len(w.sizes) {
		t.Fatalf("%d writes from %d places: the runs were copied", len(w.sizes), len(w.starts))
	}
}

// TestWriteToGathersShortRuns: over a link that gives each frame its own
// buffer, a step that takes many short runs hands the writer writes of at
// least writeToRun bytes (bar the step's last), never one per segment.
func TestWriteToGathersShortRuns(t *testing.T) {
	c1, c2 := copyConnPair(t)
	sent := sendPattern(t, c1, queuedBytes)
	awaitQueued(t, c2, queuedBytes)
	w := newRecWriter()
	copyAll(t, c2, w, queuedBytes, sent)
	if len(w.sizes) > queuedBytes/writeToRun+1 {
		t.Fatalf("%d writes for %d bytes: %v", len(w.sizes), queuedBytes, w.sizes)
	}
	for i, s := range w.sizes[:len(w.sizes)-1] {
		if s < writeToRun {
			t.Fatalf("write %d of %d holds %d bytes, want at least %d", i, len(w.sizes), s, writeToRun)
		}
	}
}

// TestWriteToEnds: a WriteTo waiting for data ends at the read deadline
// and at Close, and one whose writer fails returns the writer's error.
func TestWriteToEnds(t *testing.T) {
	c1, c2 := connPair(t, tcp.Options{}, ourDial)
	wt := func(w io.Writer) <-chan result {
		ch := make(chan result, 1)
		go func() { n, err := c2.(io.WriterTo).WriteTo(w); ch <- result{int(n), err} }()
		return ch
	}
	c2.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if r := await(t, wt(newRecWriter()), "WriteTo past its deadline"); !isTimeout(r.err) {
		t.Fatalf("WriteTo past its deadline: %v, want a timeout", r.err)
	}
	c2.SetReadDeadline(time.Time{})

	broken := errors.New("disk full")
	fw := newRecWriter()
	fw.fail = broken
	if _, err := c1.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if r := await(t, wt(fw), "WriteTo to a failing writer"); !errors.Is(r.err, broken) {
		t.Fatalf("WriteTo to a failing writer: %v, want its error", r.err)
	}

	ch := wt(newRecWriter())
	waitParked(t, "WriteTo", 1)
	c2.Close()
	if r := await(t, ch, "WriteTo across Close"); !errors.Is(r.err, net.ErrClosed) {
		t.Fatalf("WriteTo across Close: %v, want net.ErrClosed", r.err)
	}
}

// TestWriteToAllocatesNothingPerStep: once a connection's pools are warm,
// a WriteTo step (take the received bytes, write them, release them)
// allocates nothing, like the Read it stands in for.
func TestWriteToAllocatesNothingPerStep(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own: run this test without -race")
	}
	c1, c2 := connPair(t, tcp.Options{}, ourDial)
	b := c2.(*conn)
	vr := b.ep.(viewReader)
	msg := make([]byte, 64<<10)
	var err error
	allocs := testing.AllocsPerRun(200, func() {
		if err == nil {
			_, err = c1.Write(msg)
		}
		b.rmu.Lock()
		for got := 0; err == nil && got < len(msg); {
			var n int
			n, err = b.writeToStep(vr, io.Discard)
			got += n
		}
		b.rmu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per 64 KB written and taken by WriteTo steps, want 0", allocs)
	}
}

// shortConn is a connection that carries n < writeToRun bytes in one write
// and closes, as each of 10,000 connections sharing a transfer does.
func shortConn(t *testing.T, c1 net.Conn, n int) <-chan error {
	t.Helper()
	if n >= writeToRun {
		t.Fatalf("%d bytes is not a short connection", n)
	}
	return sendPattern(t, c1, n)
}

// TestWriteToHandsALoneShortRunWhereItLies: a short connection's bytes, one
// run under writeToRun with nothing before it, go to the writer in one write
// from where they lie in the receive queue, not through the staging buffer:
// gathering a lone run copies it and saves no write.
func TestWriteToHandsALoneShortRunWhereItLies(t *testing.T) {
	c1, c2 := connPair(t, tcp.Options{}, ourDial)
	const n = 12 << 10
	sent := shortConn(t, c1, n)
	awaitQueued(t, c2, n)
	b := c2.(*conn)
	vr := b.ep.(viewReader)
	b.rmu.Lock()
	var terr tcpip.Error
	b.views, _, terr = vr.ReadViews(b.views[:0], writeToTake)
	if terr != nil || len(b.views) == 0 {
		b.rmu.Unlock()
		t.Fatalf("ReadViews took %d views: %v", len(b.views), terr)
	}
	first := &b.views[0].AsSlice()[0]
	w := newRecWriter()
	k, werr := b.writeViews(w)
	for i, v := range b.views {
		v.Release()
		b.views[i] = nil
	}
	b.rmu.Unlock()
	if werr != nil || k != n || w.bad >= 0 {
		t.Fatalf("writeViews = %d, %v (byte %d wrong); want the %d bytes sent", k, werr, w.bad, n)
	}
	if len(w.sizes) != 1 || !w.starts[first] {
		t.Fatalf("writes %v from %d places, want one write from the receive queue's run", w.sizes, len(w.starts))
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

// TestWriteToHoldsNoStageBetweenSteps: a step that gathered short runs
// gives its staging buffer back when it ends, so an idle connection holds
// none (10,000 of them would hold 320 MB of stages otherwise).
func TestWriteToHoldsNoStageBetweenSteps(t *testing.T) {
	c1, c2 := copyConnPair(t)
	sent := sendPattern(t, c1, queuedBytes)
	awaitQueued(t, c2, queuedBytes)
	b := c2.(*conn)
	vr := b.ep.(viewReader)
	w := newRecWriter()
	b.rmu.Lock()
	n, err := b.writeToStep(vr, w)
	held := b.stage != nil
	b.rmu.Unlock()
	if err != nil || n != queuedBytes {
		t.Fatalf("writeToStep = %d, %v; want the %d bytes queued", n, err, queuedBytes)
	}
	if len(w.sizes) < 2 {
		t.Fatalf("writes %v: the step gathered nothing, so the test shows nothing", w.sizes)
	}
	if held {
		t.Fatal("the connection holds its staging buffer after the step")
	}
	copyAll(t, c2, w, 0, sent)
}
