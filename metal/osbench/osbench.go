// Package osbench speaks osbench-lan/3, the bench protocol between a source
// and a sink over any TCP connection (net.Conn): this module's stack, gVisor's,
// or the kernel's sockets. The receiving end measures the ramp, the bytes it
// had received 100 ms, 300 ms, 1 s and 2 s after the first payload byte and
// after accept, so every TCP under test is read the same way, at the receiver.
//
// The wire format is specified in PROTOCOL.md beside this file.
package osbench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Version is the protocol's name and version, the first word of every hello.
const Version = "osbench-lan/3"

// MaxHelloLen bounds the hello line, newline included, so a peer that never
// sends a newline is an error after this many bytes, not an unbounded read.
const MaxHelloLen = 128

// MaxReportLen bounds a report line read from the peer.
const MaxReportLen = 1 << 20

// MaxBytes is the largest transfer a hello may ask for (1 TB).
const MaxBytes = int64(1e12)

// Errors a caller can test with errors.Is.
var (
	ErrVersion        = errors.New("osbench: protocol version mismatch")
	ErrMalformedHello = errors.New("osbench: malformed hello")
	ErrShort          = errors.New("osbench: connection ended before the announced byte count")
	ErrPeer           = errors.New("osbench: the peer reported an error")
	ErrBadReport      = errors.New("osbench: malformed report")
)

// Direction says which way the payload flows, seen from the end that dials.
type Direction string

const (
	// Upload: the dialling end (the device under test) sends, the accepting
	// end receives and measures.
	Upload Direction = "upload"
	// Download: the accepting end sends, the dialling end receives and measures.
	Download Direction = "download"
)

// ParseDirection accepts "upload" or "download".
func ParseDirection(s string) (Direction, error) {
	switch Direction(s) {
	case Upload, Download:
		return Direction(s), nil
	}
	return "", fmt.Errorf("osbench: direction %q is neither %q nor %q", s, Upload, Download)
}

// Hello is the dialling end's first line: version, direction, payload bytes.
type Hello struct {
	Version string
	Dir     Direction
	Bytes   int64
}

// String is the hello as sent on the wire, newline included.
func (h Hello) String() string {
	v := h.Version
	if v == "" {
		v = Version
	}
	return fmt.Sprintf("%s %s %d\n", v, h.Dir, h.Bytes)
}

// ParseHello parses one hello line (without or with its newline). A line
// naming another osbench version returns ErrVersion; anything else that is
// not "osbench-lan/3 <upload|download> <bytes>" returns ErrMalformedHello.
func ParseHello(line string) (Hello, error) {
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	f := strings.Fields(line)
	if len(f) == 0 {
		return Hello{}, fmt.Errorf("%w: empty line", ErrMalformedHello)
	}
	if f[0] != Version {
		if strings.HasPrefix(f[0], "osbench") {
			return Hello{}, fmt.Errorf("%w: peer speaks %q, this end %q", ErrVersion, f[0], Version)
		}
		return Hello{}, fmt.Errorf("%w: %q does not start with %q", ErrMalformedHello, clip(line), Version)
	}
	if len(f) != 3 {
		return Hello{}, fmt.Errorf("%w: %q has %d fields, want 3 (version direction bytes)", ErrMalformedHello, clip(line), len(f))
	}
	d, err := ParseDirection(f[1])
	if err != nil {
		return Hello{}, fmt.Errorf("%w: %v", ErrMalformedHello, err)
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n < 0 || n > MaxBytes {
		return Hello{}, fmt.Errorf("%w: byte count %q is not an integer in [0, %d]", ErrMalformedHello, f[2], MaxBytes)
	}
	return Hello{Version: Version, Dir: d, Bytes: n}, nil
}

// ReadHello reads one hello line from r one byte at a time, so no payload
// byte after the newline is consumed. It fails after MaxHelloLen bytes
// without a newline, and on end of stream before one.
func ReadHello(r io.Reader) (Hello, error) {
	line, err := readLine(r, MaxHelloLen)
	if err != nil {
		return Hello{}, fmt.Errorf("%w: %v", ErrMalformedHello, err)
	}
	return ParseHello(line)
}

// readLine reads up to and including '\n', at most max bytes, one at a time.
func readLine(r io.Reader, max int) (string, error) {
	var buf []byte
	var b [1]byte
	for len(buf) < max {
		n, err := r.Read(b[:])
		if n == 1 {
			buf = append(buf, b[0])
			if b[0] == '\n' {
				return string(buf), nil
			}
			continue
		}
		if err == io.EOF {
			return "", fmt.Errorf("stream ended after %d bytes without a newline", len(buf))
		}
		if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("no newline in the first %d bytes", max)
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Mark is what the receiver held at one instant after its two origins.
type Mark struct {
	After      time.Duration `json:"after_ns"`
	FromFirst  int64         `json:"from_first"`  // bytes received by After past the first payload byte
	FromAccept int64         `json:"from_accept"` // bytes received by After past accept
}

// Report is the receiving end's record of one connection, sent to the other
// end as one JSON line.
type Report struct {
	Version       string    `json:"version"`
	Direction     Direction `json:"direction"`
	BytesExpected int64     `json:"bytes_expected"`
	Bytes         int64     `json:"bytes"`
	// FirstByte is the delay from accept (or dial) to the first payload byte.
	FirstByte time.Duration `json:"first_byte_after_accept_ns"`
	// Duration runs from the first payload byte to the last.
	Duration time.Duration `json:"duration_ns"`
	// GoodputMBps is Bytes over Duration in 10^6 bytes per second; 0 when
	// the payload arrived in one read.
	GoodputMBps float64 `json:"goodput_mbps"`
	Marks       []Mark  `json:"marks"`
	// Series[i] is the bytes received by i·SeriesStep past the first
	// payload byte, for plots.
	SeriesStep time.Duration `json:"series_step_ns"`
	Series     []int64       `json:"series"`
	Error      string        `json:"error,omitempty"`
}

// MarkAt returns the from-first mark at d, and whether the report has it.
func (r Report) MarkAt(d time.Duration) (int64, bool) {
	for _, m := range r.Marks {
		if m.After == d {
			return m.FromFirst, true
		}
	}
	return 0, false
}

// MarshalLine encodes the report as one JSON line.
func (r Report) MarshalLine() []byte {
	b, _ := json.Marshal(r) // a Report has no type json cannot encode
	return append(b, '\n')
}

// ParseReport decodes a report line; a line carrying an error from the peer
// returns the report and ErrPeer.
func ParseReport(line []byte) (Report, error) {
	var r Report
	if err := json.Unmarshal(line, &r); err != nil {
		return Report{}, fmt.Errorf("%w: %v", ErrBadReport, err)
	}
	if r.Error != "" {
		return r, fmt.Errorf("%w: %s", ErrPeer, r.Error)
	}
	if r.Version != Version {
		return r, fmt.Errorf("%w: report version %q, want %q", ErrVersion, r.Version, Version)
	}
	return r, nil
}

func readReport(r io.Reader) (Report, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxReportLen {
			return Report{}, fmt.Errorf("%w: longer than %d bytes", ErrBadReport, MaxReportLen)
		}
		if err == nil {
			break
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(line) == 0 {
			return Report{}, fmt.Errorf("%w: the peer closed without a report", ErrBadReport)
		}
		if err == io.EOF {
			break
		}
		return Report{}, err
	}
	return ParseReport(line)
}
