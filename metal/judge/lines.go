package judge

import (
	"fmt"
	"strings"
)

// Lines prints the verdicts one a line, as Verdict.String does, except that
// the rules of one comparison line that are NOT JUDGED for the same reason
// print as one line naming their metrics: a comparison with an arm that did
// not run says so once, not once a metric.
func Lines(vs []Verdict) []string {
	var out []string
	for i := 0; i < len(vs); {
		v := vs[i]
		j := i + 1
		if v.Rule.Kind == Compare && v.Status == NotJudged {
			for j < len(vs) && vs[j].Rule.Kind == Compare && vs[j].Rule.Line == v.Rule.Line &&
				vs[j].Status == NotJudged && vs[j].Detail == v.Detail {
				j++
			}
		}
		if j == i+1 {
			out = append(out, v.String())
		} else {
			var ms []string
			for _, w := range vs[i:j] {
				ms = append(ms, w.Rule.Metric)
			}
			out = append(out, fmt.Sprintf("%s on %s: %s: %s", baseName(v.Rule), strings.Join(ms, ", "), v.Status, v.Detail))
		}
		i = j
	}
	return out
}

// baseName is a comparison rule's line name, without its "/<metric>".
func baseName(r Rule) string {
	return strings.TrimSuffix(r.Name, "/"+r.Metric)
}

// Standing is where X stands against Y by one comparison line, metric by
// metric, in the line's order.
type Standing struct {
	Name, X, Y string
	Metrics    []string
	Status     []Status
}

// Standings gathers the comparison verdicts by rule line, in rule order.
func Standings(vs []Verdict) []Standing {
	var out []Standing
	at := map[int]int{}
	for _, v := range vs {
		if v.Rule.Kind != Compare {
			continue
		}
		k, ok := at[v.Rule.Line]
		if !ok {
			k = len(out)
			at[v.Rule.Line] = k
			out = append(out, Standing{Name: baseName(v.Rule), X: v.Rule.X, Y: v.Rule.Y})
		}
		out[k].Metrics = append(out[k].Metrics, v.Rule.Metric)
		out[k].Status = append(out[k].Status, v.Status)
	}
	return out
}

// String is "X vs Y: recv_100ms TIED, recv_300ms AHEAD, ...", or "X vs Y:
// NOT JUDGED on every metric" when no metric was judged.
func (s Standing) String() string {
	judged := false
	for _, st := range s.Status {
		judged = judged || st != NotJudged
	}
	if !judged {
		return fmt.Sprintf("%s vs %s: NOT JUDGED on every metric", s.X, s.Y)
	}
	var c []string
	for i, m := range s.Metrics {
		c = append(c, m+" "+s.Status[i].String())
	}
	return fmt.Sprintf("%s vs %s: %s", s.X, s.Y, strings.Join(c, ", "))
}
