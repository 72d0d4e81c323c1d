package observe

import (
	"bytes"
	"errors"
	"image/color"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/ptojit/ptojit/api"
)

// The longest spans of records drawn per minute and per hour; longer
// spans are drawn per day.
const (
	plotPerMinute = 2 * time.Hour
	plotHourly    = 48 * time.Hour
)

// logBucket is the records of one hour or day added up.
type logBucket struct {
	start time.Time
	t     Totals
}

// bucketsOf adds recs (oldest first) up per minute, hour or day (the
// finest whose span limit they keep: plotPerMinute, plotHourly), with a
// bucket for every period between the first and the last record.
func bucketsOf(recs []Record) []logBucket {
	if len(recs) == 0 {
		return nil
	}
	step := time.Minute
	switch span := recs[len(recs)-1].Time.Sub(recs[0].Time); {
	case span > plotHourly:
		step = 24 * time.Hour
	case span > plotPerMinute:
		step = time.Hour
	}
	first := recs[0].Time.UTC().Truncate(step)
	n := int(recs[len(recs)-1].Time.UTC().Truncate(step).Sub(first)/step) + 1
	out := make([]logBucket, n)
	for i := range out {
		out[i].start = first.Add(time.Duration(i) * step)
	}
	for i := range recs {
		j := int(recs[i].Time.UTC().Truncate(step).Sub(first) / step)
		if j >= 0 && j < n {
			out[j].t.add(&recs[i])
		}
	}
	return out
}

// PlotRequestLog draws recs into the SVG file p: three panels over time,
// the hit rate (percent of lookups), the time saved (seconds) and the
// builds and misses, per minute, hour or day (bucketsOf). gonum.org/v1/plot draws them:
// a maintained plotting library with an SVG back end in pure Go, so the
// engine stays cgo-free, and reached from this command only.
func PlotRequestLog(p string, recs []Record) error {
	bs := bucketsOf(recs)
	if len(bs) == 0 {
		return errors.New("the request log has no builds in the period to draw")
	}
	var rate, saved, builds, misses plotter.XYs
	for _, b := range bs {
		x := float64(b.start.Unix())
		if b.t.HitRate != nil {
			rate = append(rate, plotter.XY{X: x, Y: 100 * *b.t.HitRate})
		}
		saved = append(saved, plotter.XY{X: x, Y: b.t.TimeSavedSeconds})
		builds = append(builds, plotter.XY{X: x, Y: float64(b.t.Builds)})
		misses = append(misses, plotter.XY{X: x, Y: float64(b.t.Misses)})
	}
	step := "minute"
	if len(bs) > 1 {
		switch d := bs[1].start.Sub(bs[0].start); {
		case d >= 24*time.Hour:
			step = "day"
		case d >= time.Hour:
			step = "hour"
		}
	}
	panels := []*plot.Plot{
		panel("hit rate per "+step, "hit rate (%)", series{"hit rate", rate, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}}),
		panel("time saved per "+step, "time saved (s)", series{"time saved", saved, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}}),
		panel("builds per "+step, "builds", series{"builds", builds, color.RGBA{R: 0x44, G: 0x44, B: 0x44, A: 0xff}},
			series{string(api.StatusMiss) + "es", misses, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}}),
	}
	panels[0].Y.Min, panels[0].Y.Max = 0, 100
	c := vgsvg.New(6*vg.Inch, 7*vg.Inch)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	grid := make([][]*plot.Plot, len(panels))
	for i, pl := range panels {
		grid[i] = []*plot.Plot{pl}
	}
	canvases := plot.Align(grid, tiles, draw.New(c))
	for i, pl := range panels {
		pl.Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	return os.WriteFile(p, buf.Bytes(), 0o644)
}

// series is one line of a panel.
type series struct {
	name  string
	xys   plotter.XYs
	color color.Color
}

// panel is one plot over time: its title, its Y axis label and its lines
// with points, a legend when there are several.
func panel(title, ylabel string, ss ...series) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (UTC)"
	p.Y.Label.Text = ylabel
	p.X.Tick.Marker = plot.TimeTicks{Format: "01-02 15:04"}
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	for _, s := range ss {
		if len(s.xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			continue
		}
		l.Color, pts.Color = s.color, s.color
		p.Add(l, pts)
		if len(ss) > 1 {
			p.Legend.Add(s.name, l)
		}
	}
	p.Legend.Top = true
	return p
}
