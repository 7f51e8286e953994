package osbench

import (
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestMarksHoldBytesReadAtOrBeforeEachInstant(t *testing.T) {
	accept := t0
	first := t0.Add(ms(20)) // first payload byte 20 ms after accept
	m := NewMeter(accept)
	reads := []struct {
		at time.Duration // after first
		n  int
	}{
		{0, 1000},
		{ms(50), 1000},
		{ms(80), 1000},  // accept+100 ms: counted from accept at 100 ms
		{ms(100), 1000}, // exactly first+100 ms: counted
		{ms(100) + 1, 1000},
		{ms(300), 2000},
		{ms(999), 4000},
		{ms(1000) + 1, 8000},
		{ms(1500), 16000},
	}
	for _, r := range reads {
		m.Add(first.Add(r.at), r.n)
	}
	rep := m.Report(first.Add(ms(1500)), Upload, 35000)
	wantFirst := []int64{4000, 7000, 11000, 35000}
	wantAccept := []int64{3000, 5000, 7000, 35000} // accept+1 s is first+980 ms
	for i, mk := range rep.Marks {
		if mk.After != DefaultMarks[i] || mk.FromFirst != wantFirst[i] || mk.FromAccept != wantAccept[i] {
			t.Errorf("mark %v: from first %d from accept %d, want %d and %d", mk.After, mk.FromFirst, mk.FromAccept, wantFirst[i], wantAccept[i])
		}
	}
	if rep.Bytes != 35000 || rep.FirstByte != ms(20) || rep.Duration != ms(1500) {
		t.Errorf("bytes %d first byte %v duration %v", rep.Bytes, rep.FirstByte, rep.Duration)
	}
	if want := 35000 / 1.5 / 1e6; math.Abs(rep.GoodputMBps-want) > 1e-12 {
		t.Errorf("goodput %v, want %v", rep.GoodputMBps, want)
	}
	// Series: slot i holds bytes by i·10 ms past the first byte, up to the end.
	if len(rep.Series) != 151 {
		t.Fatalf("series has %d slots, want 151", len(rep.Series))
	}
	for i, want := range map[int]int64{0: 1000, 4: 1000, 5: 2000, 8: 3000, 10: 4000, 11: 5000, 30: 7000, 100: 11000, 149: 19000, 150: 35000} {
		if rep.Series[i] != want {
			t.Errorf("series[%d] = %d, want %d", i, rep.Series[i], want)
		}
	}
}

func TestHelloRoundTripsAndRejectsOtherVersions(t *testing.T) {
	h := Hello{Version: Version, Dir: Download, Bytes: 12345}
	got, err := ParseHello(h.String())
	if err != nil || got != h {
		t.Fatalf("ParseHello(%q) = %+v, %v", h.String(), got, err)
	}
	_, err = ParseHello("osbench-lan/2 upload 100\n")
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "osbench-lan/2") {
		t.Fatalf("old version: %v, want ErrVersion naming the peer's version", err)
	}
	for _, bad := range []string{"", "GET / HTTP/1.1\r\n", "osbench-lan/3 sideways 10", "osbench-lan/3 upload", "osbench-lan/3 upload -1", "osbench-lan/3 upload 10 extra", "osbench-lan/3 upload 1e3"} {
		if _, err := ParseHello(bad); !errors.Is(err, ErrMalformedHello) {
			t.Errorf("ParseHello(%q) = %v, want ErrMalformedHello", bad, err)
		}
	}
}

// serveOnPipe runs a sink on one end of a pipe and returns its result.
func serveOnPipe(t *testing.T, s *Sink, client func(net.Conn)) (Report, error) {
	t.Helper()
	a, b := net.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); client(a) }()
	type res struct {
		r   Report
		err error
	}
	done := make(chan res, 1)
	go func() { r, err := s.Serve(b, time.Time{}); done <- res{r, err} }()
	select {
	case x := <-done:
		a.Close()
		wg.Wait()
		return x.r, x.err
	case <-time.After(5 * time.Second):
		t.Fatal("the sink hung")
	}
	return Report{}, nil
}

func TestMalformedHelloIsAnErrorNotAHang(t *testing.T) {
	cases := map[string]func(net.Conn){
		"http":        func(c net.Conn) { io.WriteString(c, "GET / HTTP/1.1\r\n"); io.Copy(io.Discard, c) },
		"no newline":  func(c net.Conn) { io.WriteString(c, strings.Repeat("x", 300)); io.Copy(io.Discard, c) },
		"closed":      func(c net.Conn) { io.WriteString(c, "osbench-lan/3 up"); c.Close() },
		"silent peer": func(c net.Conn) { io.Copy(io.Discard, c) },
	}
	for name, client := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := serveOnPipe(t, &Sink{HelloTimeout: 200 * time.Millisecond}, client)
			if !errors.Is(err, ErrMalformedHello) {
				t.Fatalf("err = %v, want ErrMalformedHello", err)
			}
		})
	}
}

func TestVersionMismatchReachesTheSourceAsAClearError(t *testing.T) {
	var srcErr error
	_, err := serveOnPipe(t, &Sink{}, func(c net.Conn) {
		io.WriteString(c, "osbench-lan/2 upload 10\n")
		_, srcErr = readReport(c)
	})
	if !errors.Is(err, ErrVersion) {
		t.Fatalf("sink: %v, want ErrVersion", err)
	}
	if !errors.Is(srcErr, ErrPeer) || !strings.Contains(srcErr.Error(), "osbench-lan/2") {
		t.Fatalf("source: %v, want ErrPeer naming the version", srcErr)
	}
}

// stepClock advances by a fixed step at every reading.
type stepClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func TestUploadAndDownloadReportTheReceiversCount(t *testing.T) {
	for _, dir := range []Direction{Upload, Download} {
		t.Run(string(dir), func(t *testing.T) {
			const n = 1<<20 + 17
			clk := &stepClock{now: t0, step: ms(1)}
			var srcRep Report
			var srcErr error
			sinkRep, err := serveOnPipe(t, &Sink{Clock: clk}, func(c net.Conn) {
				srcRep, srcErr = (&Source{Clock: clk}).Run(c, dir, n)
			})
			if err != nil || srcErr != nil {
				t.Fatalf("sink %v, source %v", err, srcErr)
			}
			for _, r := range []Report{sinkRep, srcRep} {
				if r.Bytes != n || r.BytesExpected != n || r.Direction != dir || r.Version != Version {
					t.Fatalf("report %+v", r)
				}
				if last := r.Marks[len(r.Marks)-1]; last.FromFirst != n {
					t.Fatalf("2 s mark %d, want all %d bytes", last.FromFirst, n)
				}
			}
			if sinkRep.Duration != srcRep.Duration || sinkRep.Marks[0] != srcRep.Marks[0] {
				t.Fatalf("the two ends disagree: %+v vs %+v", sinkRep.Marks, srcRep.Marks)
			}
		})
	}
}

func TestShortStreamIsReportedAsShort(t *testing.T) {
	_, err := serveOnPipe(t, &Sink{}, func(c net.Conn) {
		io.WriteString(c, "osbench-lan/3 upload 1000\n")
		c.Write(make([]byte, 10))
		c.Close()
	})
	if !errors.Is(err, ErrShort) {
		t.Fatalf("err = %v, want ErrShort", err)
	}
}
