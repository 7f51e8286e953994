package judge

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The comparison rule says where X stands against Y on a metric, with no
// rounding in X's favour:
//
//	<name>: <X> vs <Y> on <metric> [<metric>...], margin spread[, ceiling <x>% of line rate]
//
// AHEAD when X's worst row beats Y's best by more than the margin, BEHIND
// when Y's worst row beats X's best by more than the margin, TIED otherwise:
// a lead exactly the margin is a tie. "Beats" follows the metric's
// direction (LowerIsBetter). The margin is fixed in the rule and sized by
// the run: "spread" is the larger of the two arms' spreads (largest row less
// smallest), what an arm varies by between its own rows, so a difference an
// arm shows against itself is never called a lead; it needs two rows of each
// arm. "ceiling x% of line rate" (goodput only, x at most MaxParityTolerance)
// ties two arms whose every row is within x% of the path's line rate (their
// Row.LineRate): there, both carry what the path allows. Several metrics on
// one line make one rule each, named <name>/<metric>.

// MarginSpread is the margin keyword of a comparison rule.
const MarginSpread = "spread"

func parseCompare(line string) ([]Rule, error) {
	name, rest, _ := strings.Cut(line, ":")
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, errors.New("want \"<name>: <rule>\"")
	}
	if strings.ContainsAny(name, " \t") {
		return nil, fmt.Errorf("rule name %q has a space", name)
	}
	const want = "want \"X vs Y on <metric> [<metric>...], margin spread[, ceiling <x>% of line rate]\""
	parts := strings.Split(rest, ",")
	f := strings.Fields(parts[0])
	if len(f) < 5 || f[1] != "vs" || f[3] != "on" {
		return nil, errors.New(want)
	}
	x, y, metrics := f[0], f[2], f[4:]
	if x == y {
		return nil, fmt.Errorf("compares arm %s with itself", x)
	}
	seen := map[string]bool{}
	for _, m := range metrics {
		if _, ok := Metrics[m]; !ok {
			return nil, fmt.Errorf("unknown metric %q (want one of %s)", m, metricNames())
		}
		if seen[m] {
			return nil, fmt.Errorf("metric %s named twice", m)
		}
		seen[m] = true
	}
	margin, ceiling := false, 0.0
	for _, p := range parts[1:] {
		o := strings.Fields(p)
		switch {
		case len(o) == 2 && o[0] == "margin":
			if o[1] != MarginSpread {
				return nil, fmt.Errorf("margin %q: want \"margin spread\" (the margin comes from the run)", o[1])
			}
			if margin {
				return nil, errors.New("margin given twice")
			}
			margin = true
		case len(o) == 5 && o[0] == "ceiling" && strings.Join(o[2:], " ") == "of line rate" && strings.HasSuffix(o[1], "%"):
			v, err := strconv.ParseFloat(strings.TrimSuffix(o[1], "%"), 64)
			if err != nil || !(v > 0 && v <= MaxParityTolerance) {
				return nil, fmt.Errorf("ceiling %q: want a percentage within (0, %g]", o[1], MaxParityTolerance)
			}
			if ceiling > 0 {
				return nil, errors.New("ceiling given twice")
			}
			if !seen["goodput"] {
				return nil, errors.New("a line-rate ceiling ties goodput, and the rule does not compare goodput")
			}
			ceiling = v
		default:
			return nil, fmt.Errorf("option %q: %s", strings.TrimSpace(p), want)
		}
	}
	// control:metal-judge-compare-no-margin
	if !margin {
		return nil, errors.New("no margin: " + want)
	}
	var out []Rule
	for _, m := range metrics {
		r := Rule{Name: name, Kind: Compare, X: x, Y: y, Metric: m}
		if len(metrics) > 1 {
			r.Name = name + "/" + m
		}
		if m == "goodput" {
			r.Ceiling = ceiling
		}
		out = append(out, r)
	}
	return out, nil
}

// lineRate is the path's line rate shared by every row of arms x and y, 0
// if any row lacks one or they differ.
func lineRate(rows []Row, x, y string) float64 {
	lr := -1.0
	for _, r := range rows {
		if r.Arm != x && r.Arm != y {
			continue
		}
		if lr >= 0 && r.LineRate != lr {
			return 0
		}
		lr = r.LineRate
	}
	return max(lr, 0)
}

func spreadOf(v []float64) float64 {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return hi - lo
}

// judgeCompare gives v (a Compare rule's verdict, its rows checked) its
// status and detail.
func judgeCompare(v *Verdict, xs, ys []float64, lr float64) {
	r := v.Rule
	unit := Metrics[r.Metric]
	if len(xs) < 2 || len(ys) < 2 {
		v.Detail = fmt.Sprintf("margin spread needs two rows of each arm: %s has %d, %s %d", r.X, len(xs), r.Y, len(ys))
		return
	}
	sx, sy := spreadOf(xs), spreadOf(ys)
	// control:metal-judge-compare-margin-one-arm
	margin := math.Max(sx, sy)
	// Orient so that larger is better; worst and best are then min and max.
	sign := 1.0
	// control:metal-judge-compare-retrans-higher-better
	if LowerIsBetter[r.Metric] {
		sign = -1
	}
	worst := func(v []float64) float64 {
		w := v[0]
		for _, x := range v {
			if sign*x < sign*w {
				w = x
			}
		}
		return w
	}
	best := func(v []float64) float64 {
		b := v[0]
		for _, x := range v {
			if sign*x > sign*b {
				b = x
			}
		}
		return b
	}
	// lead is by how much X's worst row beats Y's best; trail, Y's worst X's best.
	// control:metal-judge-compare-best-against-best
	lead := sign * (worst(xs) - best(ys))
	trail := sign * (worst(ys) - best(xs))
	a, b, d := r.X, r.Y, lead
	aw, bb := worst(xs), best(ys)
	if trail > lead {
		a, b, d = r.Y, r.X, trail
		aw, bb = worst(ys), best(xs)
	}
	// The figures carry the digits that show the smaller of the lead and
	// the margin, so a lead the table's rounding hides is still told.
	dp := decimalsFor(math.Min(nonZero(math.Abs(d)), nonZero(margin)))
	if unit == "bytes" {
		dp = 0
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', dp, 64) }
	var w strings.Builder
	fmt.Fprintf(&w, "%s %s, %s %s %s", r.X, spanAt(xs, dp), r.Y, spanAt(ys, dp), unit)
	if LowerIsBetter[r.Metric] {
		w.WriteString(" (lower is better)")
	}
	if d > 0 {
		fmt.Fprintf(&w, "; %s's worst row %s beats %s's best %s by %s %s", a, num(aw), b, num(bb), num(d), unit)
	} else {
		fmt.Fprintf(&w, "; neither arm's worst row beats the other's best (%s's worst %s against %s's best %s: %s %s)",
			a, num(aw), b, num(bb), num(d), unit)
	}
	// control:metal-judge-compare-margin-inclusive
	beyond := d > margin
	if beyond {
		w.WriteString(", more than")
	} else {
		w.WriteString(", not more than")
	}
	fmt.Fprintf(&w, " the margin %s %s (spread: %s %s, %s %s)", num(margin), unit, r.X, num(sx), r.Y, num(sy))
	switch {
	case !beyond:
		v.Status = Tied
	case a == r.X:
		v.Status = Ahead
	default:
		v.Status = Behind
	}
	if r.Ceiling > 0 {
		if lr <= 0 {
			w.WriteString("; the path's line rate is not known, so no ceiling applies")
		} else {
			floor := lr - lr*r.Ceiling/100
			lo := math.Min(lowest(xs), lowest(ys))
			// control:metal-judge-ceiling-one-arm
			if lowest(xs) >= floor && lowest(ys) >= floor {
				v.Status = Tied
				fmt.Fprintf(&w, "; every row of both within %g%% of the path's line rate %s %s (slowest %s, floor %s): TIED at the line rate",
					r.Ceiling, num(lr), unit, num(lo), num(floor))
			} else {
				fmt.Fprintf(&w, "; not both within %g%% of the path's line rate %s %s (slowest %s, floor %s)",
					r.Ceiling, num(lr), unit, num(lo), num(floor))
			}
		}
	}
	v.Detail = w.String()
}

// lowest is the smallest of v.
func lowest(v []float64) float64 {
	lo := v[0]
	for _, x := range v {
		lo = math.Min(lo, x)
	}
	return lo
}

func nonZero(x float64) float64 {
	if x == 0 {
		return math.Inf(1)
	}
	return x
}

// spanAt is the rows' range printed to dp decimals.
func spanAt(v []float64, dp int) string {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	a, b := strconv.FormatFloat(lo, 'f', dp, 64), strconv.FormatFloat(hi, 'f', dp, 64)
	if a == b {
		return a
	}
	return a + "–" + b
}
