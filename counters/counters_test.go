package counters

import (
	"bytes"
	"encoding/json"
	"errors"
	"expvar"
	"strings"
	"sync"
	"testing"
)

func TestValidNameAcceptsDottedLowerCaseOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"tcp.rto", true},
		{"tcp.hystart.css.entry-rounds", true},
		{"nic.rx.no-buffer", true},
		{"tcp.hystart.exit.cwnd.bytes", true},
		{"a1.b2", true},
		{"", false},
		{"Tcp.rto", false},
		{"tcp..rto", false},
		{".tcp", false},
		{"tcp.", false},
		{"tcp_rto", false},
		{"tcp.1rto", false},
		{"tcp rto", false},
	} {
		if got := ValidName(tc.name); got != tc.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestRegisterRejectsBadNamesAndMissingDocs(t *testing.T) {
	r := NewRegistry()
	if _, err := r.Register("TCP.X", "doc"); !errors.Is(err, ErrBadName) {
		t.Errorf("bad name: err = %v, want ErrBadName", err)
	}
	if _, err := r.Register("tcp.x", "  "); !errors.Is(err, ErrNoDoc) {
		t.Errorf("empty doc: err = %v, want ErrNoDoc", err)
	}
	if _, err := r.Register("tcp.x", "two\nlines"); !errors.Is(err, ErrNoDoc) {
		t.Errorf("two-line doc: err = %v, want ErrNoDoc", err)
	}
}

func TestRegisteringANameTwiceSharesOneCounter(t *testing.T) {
	r := NewRegistry()
	a := r.MustRegister("tcp.rto", "Retransmission timeouts.")
	b := r.MustRegister("tcp.rto", "Retransmission timeouts.")
	if a != b {
		t.Fatal("same name and doc gave two counters")
	}
	a.Inc()
	b.Add(2)
	if got := r.Lookup("tcp.rto").Load(); got != 3 {
		t.Fatalf("shared counter = %d, want 3", got)
	}
	if _, err := r.Register("tcp.rto", "Another doc."); !errors.Is(err, ErrDocMismatch) {
		t.Fatalf("doc mismatch: err = %v", err)
	}
}

func TestNilCounterCountsNothing(t *testing.T) {
	var c *Counter
	c.Inc()
	c.Add(5)
	c.Max(9)
	if c.Load() != 0 {
		t.Fatal("nil counter returned a value")
	}
}

func TestMaxKeepsTheHighWaterMark(t *testing.T) {
	r := NewRegistry()
	c := r.MustRegister("nic.queue.high-water", "Largest queue seen, in bytes.")
	for _, v := range []uint64{3, 10, 7, 10, 2} {
		c.Max(v)
	}
	if c.Load() != 10 {
		t.Fatalf("high-water = %d, want 10", c.Load())
	}
}

func TestConcurrentIncrementsAreNotLost(t *testing.T) {
	r := NewRegistry()
	c := r.MustRegister("tcp.segments.out", "Segments sent.")
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				c.Inc()
			}
		}()
	}
	wg.Wait()
	if c.Load() != 80000 {
		t.Fatalf("count = %d, want 80000", c.Load())
	}
}

func TestSnapshotDiffSubtractsNameByName(t *testing.T) {
	r := NewRegistry()
	a := r.MustRegister("tcp.a", "A.")
	a.Add(5)
	before := r.Snapshot()
	a.Add(7)
	b := r.MustRegister("tcp.b", "B.")
	b.Add(4)
	d := r.Snapshot().Diff(before)
	if d["tcp.a"] != 7 || d["tcp.b"] != 4 {
		t.Fatalf("diff = %v, want tcp.a 7, tcp.b 4", d)
	}
	// Snapshots passed in the wrong order never wrap around.
	if w := before.Diff(r.Snapshot()); w["tcp.a"] != 0 {
		t.Fatalf("reversed diff wrapped: %v", w)
	}
}

func TestTextDumpIsSortedNameValueLines(t *testing.T) {
	r := NewRegistry()
	r.MustRegister("tcp.z", "Z.").Add(1)
	r.MustRegister("nic.a", "A.").Add(22)
	r.MustRegister("tcp.hystart.css", "CSS entries.").Add(3)
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "nic.a 22\ntcp.hystart.css 3\ntcp.z 1\n"
	if b.String() != want {
		t.Fatalf("text dump:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestPrometheusExpositionHasHelpTypeAndUnderscores(t *testing.T) {
	r := NewRegistry()
	r.MustRegister("tcp.hystart.css.entry-rounds", "Rounds in which CSS was entered at least once.").Add(4)
	var b bytes.Buffer
	if err := r.WritePrometheus(&b, "netramp"); err != nil {
		t.Fatal(err)
	}
	want := "# HELP netramp_tcp_hystart_css_entry_rounds Rounds in which CSS was entered at least once.\n" +
		"# TYPE netramp_tcp_hystart_css_entry_rounds counter\n" +
		"netramp_tcp_hystart_css_entry_rounds 4\n"
	if b.String() != want {
		t.Fatalf("exposition:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestPrometheusEscapesBackslashesInHelp(t *testing.T) {
	r := NewRegistry()
	r.MustRegister("tcp.x", `A path like C:\x.`)
	var b bytes.Buffer
	_ = r.WritePrometheus(&b, "")
	if !strings.Contains(b.String(), `# HELP tcp_x A path like C:\\x.`) {
		t.Fatalf("HELP not escaped:\n%s", b.String())
	}
}

func TestPublishExposesLiveValuesThroughExpvar(t *testing.T) {
	r := NewRegistry()
	c := r.MustRegister("tcp.rto", "Retransmission timeouts.")
	name := "netramp-test-publish"
	if err := r.Publish(name); err != nil {
		t.Fatal(err)
	}
	c.Add(9)
	var got map[string]uint64
	if err := json.Unmarshal([]byte(expvar.Get(name).String()), &got); err != nil {
		t.Fatal(err)
	}
	if got["tcp.rto"] != 9 {
		t.Fatalf("expvar shows %v, want tcp.rto 9", got)
	}
	if err := r.Publish(name); err == nil {
		t.Fatal("publishing one expvar name twice did not fail")
	}
}
