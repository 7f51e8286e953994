package osbench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// DefaultHelloTimeout bounds the wait for a hello on an accepted connection.
const DefaultHelloTimeout = 10 * time.Second

const chunk = 64 << 10

// Sink is the accepting end. For an upload it receives and measures, then
// sends its report; for a download it sends and then reads the dialler's
// report. Either way Serve returns the receiver's report.
type Sink struct {
	Clock        Clock         // nil = SystemClock
	HelloTimeout time.Duration // 0 = DefaultHelloTimeout; applied with SetReadDeadline
	MaxBytes     int64         // largest transfer accepted; 0 = MaxBytes
}

// Source is the dialling end: it sends the hello, then sends (upload) or
// receives and measures (download).
type Source struct {
	Clock Clock // nil = SystemClock
}

func clockOr(c Clock) Clock {
	if c == nil {
		return SystemClock{}
	}
	return c
}

// Serve runs one connection from the peer's hello to the report and closes
// conn. accepted is the instant accept returned; the zero time means now.
func (s *Sink) Serve(conn net.Conn, accepted time.Time) (Report, error) {
	defer conn.Close()
	clk := clockOr(s.Clock)
	if accepted.IsZero() {
		accepted = clk.Now()
	}
	ht := s.HelloTimeout
	if ht == 0 {
		ht = DefaultHelloTimeout
	}
	// control:metal-hello-without-deadline
	_ = conn.SetReadDeadline(time.Now().Add(ht)) // deadlines are real time even in virtual-time runs
	h, err := ReadHello(conn)
	if err != nil {
		refuse(conn, err)
		return Report{}, err
	}
	_ = conn.SetReadDeadline(time.Time{})
	max := s.MaxBytes
	if max == 0 {
		max = MaxBytes
	}
	if h.Bytes > max {
		err := fmt.Errorf("%w: %d bytes asked, this sink accepts at most %d", ErrMalformedHello, h.Bytes, max)
		refuse(conn, err)
		return Report{}, err
	}
	switch h.Dir {
	case Upload:
		r, err := Receive(conn, clk, accepted, h)
		if err != nil {
			r.Error = err.Error()
		}
		if _, werr := conn.Write(r.MarshalLine()); werr != nil && err == nil {
			err = fmt.Errorf("osbench: sending the report: %w", werr)
		}
		return r, err
	default:
		if err := send(conn, h.Bytes); err != nil {
			return Report{}, err
		}
		closeWrite(conn)
		return readReport(conn)
	}
}

// Run runs one connection already dialled, in direction
// dir with n payload bytes, and returns the receiver's report. It closes conn.
func (s *Source) Run(conn net.Conn, dir Direction, n int64) (Report, error) {
	defer conn.Close()
	clk := clockOr(s.Clock)
	dialled := clk.Now()
	h := Hello{Version: Version, Dir: dir, Bytes: n}
	if _, err := ParseHello(h.String()); err != nil {
		return Report{}, err
	}
	if _, err := io.WriteString(conn, h.String()); err != nil {
		return Report{}, fmt.Errorf("osbench: sending the hello: %w", err)
	}
	switch dir {
	case Upload:
		if err := send(conn, n); err != nil {
			// A sink that refused the hello said why before closing.
			_ = conn.SetReadDeadline(time.Now().Add(time.Second))
			if r, perr := readReport(conn); errors.Is(perr, ErrPeer) {
				return r, perr
			}
			return Report{}, err
		}
		closeWrite(conn)
		return readReport(conn)
	default:
		r, err := Receive(conn, clk, dialled, h)
		if err != nil {
			r.Error = err.Error()
		}
		_, _ = conn.Write(r.MarshalLine())
		closeWrite(conn)
		return r, err
	}
}

// Receive reads h.Bytes payload bytes from r, metering each read on clk.
func Receive(r io.Reader, clk Clock, accepted time.Time, h Hello) (Report, error) {
	m := NewMeter(accepted)
	buf := make([]byte, chunk)
	var err error
	for m.Bytes() < h.Bytes {
		want := int64(len(buf))
		if rest := h.Bytes - m.Bytes(); rest < want {
			want = rest
		}
		n, rerr := r.Read(buf[:want])
		if n > 0 {
			m.Add(clk.Now(), n)
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				err = fmt.Errorf("%w: %d of %d bytes", ErrShort, m.Bytes(), h.Bytes)
			} else {
				err = rerr
			}
			break
		}
	}
	return m.Report(clk.Now(), h.Dir, h.Bytes), err
}

var pattern = func() []byte {
	b := make([]byte, chunk)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}()

func send(w io.Writer, n int64) error {
	for n > 0 {
		c := int64(len(pattern))
		if n < c {
			c = n
		}
		k, err := w.Write(pattern[:c])
		n -= int64(k)
		if err != nil {
			return fmt.Errorf("osbench: sending the payload (%d bytes left): %w", n, err)
		}
	}
	return nil
}

// refuse tells the peer why its hello was refused, waiting at most a second
// for the write so a peer that reads nothing cannot hold the sink.
func refuse(conn net.Conn, err error) {
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = conn.Write(Report{Version: Version, Error: err.Error()}.MarshalLine())
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
