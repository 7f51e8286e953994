// Package xfer is the small protocol between the QEMU guest's test program and
// the host's sink: the guest opens a TCP connection through slirp and either
// uploads bytes the sink hashes and answers with the digest (PUT), or
// downloads a seeded stream followed by the sender's digest (GET); the end
// that received compares the digest of what it got with the sender's.
package xfer

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MaxSize bounds one transfer so a corrupt header cannot make the sink run
// for ever.
const MaxSize = 1 << 30

// ErrBadRequest reports a header line the sink does not understand.
var ErrBadRequest = errors.New("xfer: bad request")

// Pattern returns the deterministic byte stream for seed: the bytes a GET
// carries, and what a guest uploads for PUT.
func Pattern(seed uint64) io.Reader {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	return rand.NewChaCha8(key)
}

// PatternSum is the SHA-256 of the first n bytes of Pattern(seed).
func PatternSum(seed uint64, n int64) string {
	h := sha256.New()
	io.CopyN(h, Pattern(seed), n)
	return hex.EncodeToString(h.Sum(nil))
}

// Request is one parsed header line.
type Request struct {
	Op   string // "PUT" or "GET"
	Size int64
	Seed uint64 // GET only
}

// String is the header line, newline included.
func (r Request) String() string {
	if r.Op == "GET" {
		return fmt.Sprintf("GET %d %d\n", r.Size, r.Seed)
	}
	return fmt.Sprintf("PUT %d\n", r.Size)
}

// ParseRequest parses a header line without its newline.
func ParseRequest(line string) (Request, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return Request{}, fmt.Errorf("%w: %q", ErrBadRequest, line)
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || n < 0 || n > MaxSize {
		return Request{}, fmt.Errorf("%w: size in %q", ErrBadRequest, line)
	}
	switch {
	case f[0] == "PUT" && len(f) == 2:
		return Request{Op: "PUT", Size: n}, nil
	case f[0] == "GET" && len(f) == 3:
		seed, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return Request{}, fmt.Errorf("%w: seed in %q", ErrBadRequest, line)
		}
		return Request{Op: "GET", Size: n, Seed: seed}, nil
	}
	return Request{}, fmt.Errorf("%w: %q", ErrBadRequest, line)
}

// Serve handles one connection on the sink's side and returns what it did:
// for PUT it reads Size bytes and answers "<sha256> <size>\n"; for GET it
// writes Size bytes of the pattern, then "<sha256> <size>\n" of what it
// wrote.
func Serve(c io.ReadWriter) (Request, string, error) {
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return Request{}, "", fmt.Errorf("xfer: reading header: %w", err)
	}
	req, err := ParseRequest(strings.TrimSpace(line))
	if err != nil {
		return req, "", err
	}
	switch req.Op {
	case "PUT":
		h := sha256.New()
		got, err := io.CopyN(h, br, req.Size)
		sum := hex.EncodeToString(h.Sum(nil))
		if err != nil {
			return req, sum, fmt.Errorf("xfer: PUT got %d of %d bytes: %w", got, req.Size, err)
		}
		_, err = fmt.Fprintf(c, "%s %d\n", sum, got)
		return req, sum, err
	default:
		h := sha256.New()
		if _, err := io.CopyN(io.MultiWriter(c, h), Pattern(req.Seed), req.Size); err != nil {
			return req, "", err
		}
		sum := hex.EncodeToString(h.Sum(nil))
		_, err := fmt.Fprintf(c, "%s %d\n", sum, req.Size)
		return req, sum, err
	}
}

// Put uploads n bytes of Pattern(seed) on c and checks the sink's SHA-256
// against its own; it returns the digest.
func Put(c io.ReadWriter, seed uint64, n int64) (string, error) {
	if _, err := io.WriteString(c, Request{Op: "PUT", Size: n}.String()); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(c, h), Pattern(seed), n); err != nil {
		return "", fmt.Errorf("xfer: PUT: %w", err)
	}
	want := hex.EncodeToString(h.Sum(nil))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return want, fmt.Errorf("xfer: PUT: reading the sink's digest: %w", err)
	}
	if got := strings.TrimSpace(line); got != fmt.Sprintf("%s %d", want, n) {
		return want, fmt.Errorf("xfer: PUT: sink reports %q, sent %s %d", got, want, n)
	}
	return want, nil
}

// Get downloads n bytes seeded by seed from c and checks their SHA-256
// against the digest the sender appends; it returns the digest.
func Get(c io.ReadWriter, seed uint64, n int64) (string, error) {
	if _, err := io.WriteString(c, Request{Op: "GET", Size: n, Seed: seed}.String()); err != nil {
		return "", err
	}
	br := bufio.NewReader(c)
	h := sha256.New()
	got, err := io.CopyN(h, br, n)
	sum := hex.EncodeToString(h.Sum(nil))
	if err != nil {
		return sum, fmt.Errorf("xfer: GET got %d of %d bytes: %w", got, n, err)
	}
	return sum, CheckTrailer(br, sum, n)
}

// CheckTrailer reads the sender's "<sha256> <size>" line and compares it
// with the digest of what was received.
func CheckTrailer(r io.Reader, sum string, n int64) error {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		return fmt.Errorf("xfer: reading the sender's digest: %w", err)
	}
	// control:qemu-xfer-digest-ignored
	if got, want := strings.TrimSpace(line), fmt.Sprintf("%s %d", sum, n); got != want {
		return fmt.Errorf("xfer: sender's digest is %q, received %q", got, want)
	}
	return nil
}
