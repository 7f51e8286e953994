package wire

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTsharkReadsThePcap checks the capture against an independent reader
// when tshark is installed: every frame decodes as IPv4/TCP with the sequence
// numbers sent, and exactly the corrupted ones fail their TCP checksum.
func TestTsharkReadsThePcap(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed")
	}
	r := newRig(t, Config{AtoB: Dir{Delay: time.Millisecond, RateBps: 1e9, Corrupt: 0.3}, Seed: 4})
	path := filepath.Join(t.TempDir(), "b.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.w.Pcap(SideB, f); err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for i := 0; i < 20; i++ {
		frames = append(frames, data(uint32(1000+i), 50*i))
	}
	r.sendEvery(t, r.w.A(), time.Millisecond, frames)
	r.drain()
	f.Close()
	out, err := exec.Command(tshark, "-r", path, "-o", "tcp.relative_sequence_numbers:FALSE",
		"-o", "tcp.check_checksum:TRUE", "-T", "fields", "-e", "ip.src", "-e", "tcp.seq", "-e", "tcp.checksum.status").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("tshark read %d frames, want %d:\n%s", len(lines), len(frames), out)
	}
	bad := 0
	for i, l := range lines {
		fields := strings.Split(l, "\t")
		if len(fields) != 3 || fields[0] != "198.18.0.1" {
			t.Fatalf("tshark line %d: %q", i, l)
		}
		switch fields[2] {
		case "0": // Wireshark's PROTO_CHECKSUM_E_BAD
			bad++
		case "1": // PROTO_CHECKSUM_E_GOOD
			if fields[1] != strconv.Itoa(1000+i) {
				t.Fatalf("tshark line %d: seq %s, want %d", i, fields[1], 1000+i)
			}
		default:
			t.Fatalf("tshark line %d: checksum status %q", i, fields[2])
		}
	}
	s, _ := r.w.Stats()
	if bad != int(s.Corrupted) || bad == 0 {
		t.Fatalf("tshark found %d bad checksums, the wire corrupted %d", bad, s.Corrupted)
	}
}
