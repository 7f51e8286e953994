package judge

import (
	"errors"
	"strings"
	"testing"
)

func TestRankPIsExactForKnownArrangements(t *testing.T) {
	cases := []struct {
		name     string
		xs, ys   []float64
		num, den int64
	}{
		{"3 over 3, full separation", []float64{112, 113, 114}, []float64{87, 88, 89}, 1, 20},
		{"3 under 3", []float64{1, 2, 3}, []float64{4, 5, 6}, 1, 1},
		// One inversion: U = 8 of 9; splits with U >= 8 are {456} and {356}: 2/20.
		{"one inversion", []float64{3, 5, 6}, []float64{1, 2, 4}, 1, 10},
		{"2 over 2", []float64{10, 11}, []float64{1, 2}, 1, 6},
		{"4 over 4", []float64{5, 6, 7, 8}, []float64{1, 2, 3, 4}, 1, 70},
		// All equal: every split has U = n·m/2, so p = 1.
		{"all tied", []float64{7, 7, 7}, []float64{7, 7, 7}, 1, 1},
		// xs = {2,2}, ys = {1,2}: 2U = 2+2+1+1 = 6 -> U = 3; pooled {2,2,1,2}: splits
		// with U >= 3 are those holding two 2s (3 of 6).
		{"tie at the border", []float64{2, 2}, []float64{1, 2}, 1, 2},
		{"1 over 1", []float64{2}, []float64{1}, 1, 2},
	}
	for _, c := range cases {
		num, den, err := RankP(c.xs, c.ys)
		if err != nil || num != c.num || den != c.den {
			t.Errorf("%s: p = %d/%d (%v), want %d/%d", c.name, num, den, err, c.num, c.den)
		}
	}
	if _, _, err := RankP(nil, []float64{1}); err == nil {
		t.Error("RankP with no rows on one side gave no error")
	}
}

func rows(spec map[string][]float64, metric string) []Row {
	// interleave arms in run order: A B A B ...
	var out []Row
	for i := 0; ; i++ {
		added := false
		for _, arm := range []string{"Linux", "A", "B"} {
			if i < len(spec[arm]) {
				out = append(out, Row{Arm: arm, Values: map[string]float64{metric: spec[arm][i]}})
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

func mustParse(t *testing.T, text string) []Rule {
	t.Helper()
	r, err := Parse("test.rules", text)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestVerdicts(t *testing.T) {
	faster := mustParse(t, "faster: B > A on goodput in every pair, p <= 0.05")
	cases := []struct {
		name   string
		rules  []Rule
		spec   map[string][]float64
		unavl  map[string]string
		status Status
		detail string
	}{
		{"full separation", faster, map[string][]float64{"A": {87, 87, 87}, "B": {112, 112, 112}}, nil, Confirmed, "p = 1/20"},
		{"one pair lost", faster, map[string][]float64{"A": {87, 113, 87}, "B": {112, 112, 112}}, nil, NotConfirmed, "2 of 3 pairs"},
		{"a tie is not faster", faster, map[string][]float64{"A": {87, 87, 112}, "B": {112, 112, 112}}, nil, NotConfirmed, "2 of 3 pairs"},
		{"two pairs cannot reach 0.05", faster, map[string][]float64{"A": {87, 87}, "B": {112, 112}}, nil, NotConfirmed, "p = 1/6 = 0.167 > 0.05"},
		{"no alpha: every pair suffices", mustParse(t, "f: B > A on goodput in every pair"), map[string][]float64{"A": {87, 87}, "B": {112, 112}}, nil, Confirmed, "2 of 2"},
		{"lower is better", mustParse(t, "f: B < A on goodput in every pair, p <= 0.05"), map[string][]float64{"A": {87, 88, 89}, "B": {10, 11, 12}}, nil, Confirmed, "p = 1/20"},
		{"arm absent", faster, map[string][]float64{"A": {87, 87, 87}}, nil, NotJudged, "arm B has no rows"},
		{"arm unavailable", mustParse(t, "parity: B within 3 MB/s of Linux on goodput"), map[string][]float64{"B": {112}}, map[string]string{"Linux": "not root"}, NotJudged, "not root"},
		{"parity kept", mustParse(t, "parity: B within 3 MB/s of Linux on goodput"), map[string][]float64{"B": {111, 112, 112}, "Linux": {113, 114}}, nil, Confirmed, "differ by 1.50"},
		{"parity missed", mustParse(t, "parity: B within 1 of Linux on goodput"), map[string][]float64{"B": {111, 112, 112}, "Linux": {113, 114}}, nil, NotConfirmed, "differ by 1.50"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(c.rules, rows(c.spec, c.rules[0].Metric), c.unavl)
			if len(v) != 1 || v[0].Status != c.status || !strings.Contains(v[0].Detail, c.detail) {
				t.Fatalf("got %v, want %v containing %q", v, c.status, c.detail)
			}
		})
	}
}

func TestIdenticalRowsAreSaidToBeDeterministic(t *testing.T) {
	r := mustParse(t, "faster: B > A on goodput in every pair, p <= 0.05")
	v := Judge(r, rows(map[string][]float64{"A": {87, 87, 87}, "B": {112, 112, 112}}, "goodput"), nil)
	if v[0].Status != Confirmed || !strings.Contains(v[0].Detail, "rows are identical") {
		t.Fatalf("got %v", v[0])
	}
	v = Judge(r, rows(map[string][]float64{"A": {87, 88, 87}, "B": {112, 112, 112}}, "goodput"), nil)
	if strings.Contains(v[0].Detail, "identical") {
		t.Fatalf("varying rows called identical: %v", v[0])
	}
}

func TestRowsOfDifferentTimeBasesAreNotCompared(t *testing.T) {
	for _, rule := range []string{"parity: B within 3 MB/s of Linux on goodput", "parity: B >= slowest Linux on goodput"} {
		r := mustParse(t, rule)
		rs := []Row{{Arm: "B", Timebase: "virtual", Values: map[string]float64{"goodput": 113}}, {Arm: "Linux", Timebase: "real", Values: map[string]float64{"goodput": 113}}}
		v := Judge(r, rs, nil)
		if v[0].Status != NotJudged || !strings.Contains(v[0].Detail, "B ran in virtual time, Linux in real time") {
			t.Fatalf("%s: got %v", rule, v[0])
		}
		rs[0].Timebase = "real"
		if v := Judge(r, rs, nil); v[0].Status != Confirmed || !strings.Contains(v[0].Detail, "both in real time") {
			t.Fatalf("%s, both real: got %v", rule, v[0])
		}
	}
}

// TestParityIsAtLeastTheSlowestLinuxRow: B's median must reach Linux's
// slowest row; the field report's B 112 against Linux 113 MB/s misses, and a
// tolerance above 1% is refused when the rules are read.
func TestParityIsAtLeastTheSlowestLinuxRow(t *testing.T) {
	rs := func(b []float64) []Row {
		return rows(map[string][]float64{"B": b, "Linux": {113, 115, 114}}, "goodput")
	}
	for _, c := range []struct {
		rule string
		b    []float64
		want Status
	}{
		{"parity: B >= slowest Linux on goodput", []float64{112, 112, 112}, NotConfirmed},
		{"parity: B >= slowest Linux on goodput", []float64{110, 113, 120}, Confirmed},
		{"parity: B >= slowest Linux on goodput, tolerance 1%", []float64{112, 112, 112}, Confirmed},
		{"parity: B >= slowest Linux on goodput, tolerance 0.5%", []float64{112, 112, 112}, NotConfirmed},
	} {
		v := Judge(mustParse(t, c.rule), rs(c.b), nil)
		if v[0].Status != c.want || !strings.Contains(v[0].Detail, "Linux's slowest row 113") {
			t.Errorf("%s with B %v: got %v, want %v", c.rule, c.b, v[0], c.want)
		}
	}
	if _, err := Parse("r", "parity: B >= slowest Linux on goodput, tolerance 2%"); !errors.Is(err, ErrParse) {
		t.Errorf("a 2%% tolerance parsed: %v", err)
	}
}

// TestParityShortfallShowsTheDigitsThatMissIt: a miss the headline's two
// decimals hide is still told, to two significant digits of the shortfall,
// never as "0.0% short".
func TestParityShortfallShowsTheDigitsThatMissIt(t *testing.T) {
	r := mustParse(t, "parity: B >= slowest Linux on goodput")
	for _, c := range []struct {
		b, linux float64
		want     string
	}{
		{2.34995, 2.35, "B is 0.0021% short (2.349950 against 2.350000 MB/s, 0.000050 MB/s less)"},
		{5.50, 5.54, "B is 0.72% short (5.500 against 5.540 MB/s, 0.040 MB/s less)"},
		{8.64, 8.89, "B is 2.81% short (8.64 against 8.89 MB/s, 0.25 MB/s less)"},
	} {
		v := Judge(r, rows(map[string][]float64{"B": {c.b, c.b, c.b}, "Linux": {c.linux, c.linux + 0.01}}, "goodput"), nil)
		if v[0].Status != NotConfirmed || !strings.Contains(v[0].Detail, c.want) || strings.Contains(v[0].Detail, " 0.0% short") {
			t.Errorf("B %v against %v: got %q, want it to say %q", c.b, c.linux, v[0].Detail, c.want)
		}
	}
}

func TestUnmeasuredMetricIsNotJudged(t *testing.T) {
	r := mustParse(t, "late: B > A on recv_2s in every pair")
	rs := []Row{{Arm: "A", Values: map[string]float64{"goodput": 1}}, {Arm: "B", Values: map[string]float64{"goodput": 2}}}
	v := Judge(r, rs, nil)
	if v[0].Status != NotJudged || !strings.Contains(v[0].Detail, "recv_2s not measured") {
		t.Fatalf("got %v", v[0])
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	cases := map[string]string{
		"# header\n\nfaster: B >> A on goodput in every pair\n":                   "test.rules:3:",
		"faster: B > A on goodput in every pair\nx: B > A on speed in every pair": "test.rules:2: unknown metric \"speed\"",
		"no colon here": "test.rules:1:",
		"p: B > A on goodput in every pair, p <= 2":                            "test.rules:1: alpha",
		"p: B within 3 MB of Linux on goodput":                                 "test.rules:1: unit \"MB\"",
		"p: B > B on goodput in every pair":                                    "itself",
		"a: B > A on goodput in every pair\na: B > A on recv_1s in every pair": "test.rules:2: rule name \"a\" already used on line 1",
		"# only comments\n":                                                    "no rules",
	}
	for text, want := range cases {
		_, err := Parse("test.rules", text)
		if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an ErrParse containing %q", text, err, want)
		}
	}
}

func TestDefaultRulesParse(t *testing.T) {
	r := mustParse(t, DefaultRules)
	if len(r) != 3 || r[0].Name != "faster" || r[0].Alpha != 0.05 || r[2].X != "P" || r[2].Metric != "recv_100ms" {
		t.Fatalf("default rules parsed as %+v", r)
	}
}

func TestParityRulesParse(t *testing.T) {
	r := mustParse(t, ParityRules)
	byName := map[string]Rule{}
	for _, x := range r {
		byName[x.Name] = x
	}
	for _, n := range ParityRuleNames {
		x, ok := byName[n]
		if !ok || x.Kind != AtLeastSlowest || x.X != "B" || x.Tolerance != 0 || x.Metric != "goodput" {
			t.Errorf("parity rule %s: %+v", n, x)
		}
	}
}

// TestRerunLateLineIsParsedStrictly: "rerun-late: once" turns re-runs on and
// is no rule; any other value, or the line twice, is an error naming the
// line; without it nothing is re-run. The parity rules re-run late rows.
func TestRerunLateLineIsParsedStrictly(t *testing.T) {
	const rule = "p: B >= slowest A on goodput\n"
	f, err := ParseFile("t.rules", rule+"rerun-late: once\n")
	if err != nil || !f.RerunLate || len(f.Rules) != 1 {
		t.Fatalf("with the line: %+v, %v", f, err)
	}
	if f, err := ParseFile("t.rules", rule); err != nil || f.RerunLate {
		t.Fatalf("without the line: %+v, %v", f, err)
	}
	for _, bad := range []string{"rerun-late: twice\n", "rerun-late:\n", "rerun-late: once\nrerun-late: once\n"} {
		if _, err := ParseFile("t.rules", rule+bad); !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), "t.rules:") {
			t.Errorf("%q: err = %v, want a parse error naming the line", bad, err)
		}
	}
	if f, err := ParseFile("parity.rules", ParityRules); err != nil || !f.RerunLate {
		t.Errorf("parity rules: rerun-late %v, %v", f.RerunLate, err)
	}
}
