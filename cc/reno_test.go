package cc

import "testing"

func TestRenoSlowStartGrowsByAtMostOneSegmentPerAck(t *testing.T) {
	cases := []struct {
		name                        string
		cwnd, ssthresh, acked, want int
	}{
		{"one segment grows one", 10 * smss, 100 * smss, smss, 11 * smss},
		{"stretch ack of 34 grows one", 10 * smss, 100 * smss, 34 * smss, 11 * smss},
		{"partial segment grows its bytes", 10 * smss, 100 * smss, 500, 10*smss + 500},
		{"capped at ssthresh", 10*smss - 100, 10 * smss, smss, 10 * smss},
		{"no growth at ssthresh", 10 * smss, 10 * smss, smss, 10 * smss},
		{"zero acked grows nothing", 10 * smss, 100 * smss, 0, 10 * smss},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := renoSlowStart(tc.cwnd, tc.ssthresh, tc.acked, smss); got != tc.want {
				t.Fatalf("renoSlowStart(%d, %d, %d) = %d, want %d", tc.cwnd, tc.ssthresh, tc.acked, got, tc.want)
			}
		})
	}
}
