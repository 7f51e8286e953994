package report

import (
	"fmt"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// rowSeries is a row's mean received-bytes series (MB by time), each
// connection held at its total after its last byte.
func rowSeries(r Row, horizon time.Duration) plotter.XYs {
	if len(r.Conns) == 0 {
		return nil
	}
	step := r.Conns[0].Report.SeriesStep
	if step <= 0 {
		return nil
	}
	n := int(horizon/step) + 1
	xy := make(plotter.XYs, n)
	for i := range xy {
		xy[i].X = (time.Duration(i) * step).Seconds()
		sum := 0.0
		for _, c := range r.Conns {
			s := c.Report.Series
			switch {
			case i < len(s):
				sum += float64(s[i])
			default:
				sum += float64(c.Report.Bytes)
			}
		}
		xy[i].Y = sum / float64(len(r.Conns)) / 1e6
	}
	return xy
}

// Plot draws the received bytes against time since the first payload byte,
// one line per row (each the mean of its connections), one colour per arm,
// up to horizon (0 = the longest connection, at most 3 s), and saves it to
// every path given (the format follows the extension: .png, .svg, .pdf).
func Plot(rows []Row, title string, horizon time.Duration, paths ...string) error {
	if horizon <= 0 {
		for _, r := range rows {
			for _, c := range r.Conns {
				if d := c.Report.Duration; d > horizon {
					horizon = d
				}
			}
		}
		if horizon > 3*time.Second {
			horizon = 3 * time.Second
		}
		if horizon <= 0 {
			horizon = time.Second
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since the connection's first payload byte (s)"
	p.Y.Label.Text = "received (MB)"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	for i, arm := range ArmOrder(rows) {
		col := plotutil.Color(i)
		dash := plotutil.Dashes(i)
		first := true
		for _, r := range rows {
			if r.Arm != arm {
				continue
			}
			xy := rowSeries(r, horizon)
			if xy == nil {
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return fmt.Errorf("report: plot %s: %w", arm, err)
			}
			l.Color = col
			l.Dashes = dash
			l.Width = vg.Points(1.2)
			p.Add(l)
			if first {
				p.Legend.Add(fmt.Sprintf("%s (%s time)", arm, r.Timebase), l)
				first = false
			}
		}
	}
	p.X.Min = 0
	p.Y.Min = 0
	for _, path := range paths {
		if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
			return fmt.Errorf("report: saving the plot: %w", err)
		}
	}
	return nil
}
