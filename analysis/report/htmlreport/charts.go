package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/nel-eval/nel/analysis/report/internal/view"
	"github.com/nel-eval/nel/runtime/metrics"
)

// Charts are drawn by gonum/plot into SVG and embedded in the page. Text
// is Liberation Sans (gonum/plot's fonts, embedded in the Go module), which
// the page embeds once as a web font; Arial is metric-compatible, so the
// fallbacks lay out the same.

// sans is the charts' font.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// The palette (colour-blind safe: Okabe–Ito).
var (
	colCLT       = rgb(0x00, 0x72, 0xb2) // blue
	colBootstrap = rgb(0xd5, 0x5e, 0x00) // vermillion
	colPoint     = rgb(0x1a, 0x1a, 0x1a)
	colBar       = rgb(0x56, 0xb4, 0xe9) // sky blue
	colFail      = rgb(0xcc, 0x79, 0xa7) // reddish purple
	colAxis      = rgb(0x55, 0x55, 0x55)
	colGrid      = rgb(0xe3, 0xe3, 0xe3)
	colP50       = rgb(0x00, 0x9e, 0x73) // green
	colP90       = rgb(0xe6, 0x9f, 0x00) // orange
	colP99       = rgb(0xd5, 0x5e, 0x00)
)

func rgb(r, g, b uint8) color.RGBA { return color.RGBA{r, g, b, 0xff} }

// Charts are drawn at about the size the page shows them (CSS scales
// them to their box), so their text matches the page's.
const (
	fullWidth = 10 * vg.Inch // the suite chart, across the page
	halfWidth = 5 * vg.Inch  // charts beside a table
)

// chart is a drawn chart, or why there is none.
type chart struct {
	SVG template.HTML
	// Skip says why there is no chart ("no categories").
	Skip string
}

// newPlot returns a plot in the report's style.
func newPlot() *plot.Plot {
	p := plot.New()
	p.BackgroundColor = color.White
	p.Title.TextStyle.Font = font.From(sans, 11)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Label.TextStyle.Color = colAxis
		a.Tick.Label.Font = font.From(sans, 9)
		a.Tick.Label.Color = colAxis
		a.Color = colAxis
		a.Tick.Color = colAxis
		a.LineStyle.Color = colAxis
		a.Tick.LineStyle.Color = colAxis
	}
	p.Legend.TextStyle.Font = font.From(sans, 9)
	p.X.Tick.Marker = cleanTicks{}
	p.Y.Tick.Marker = cleanTicks{}
	return p
}

// cleanTicks are gonum's default ticks labelled without trailing zeros
// ("250", not "250.00"); with counts set, only whole numbers are labelled.
type cleanTicks struct{ counts bool }

func (c cleanTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if c.counts && t.Value != math.Trunc(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = strconv.FormatFloat(math.Round(t.Value*1e9)/1e9, 'f', -1, 64)
		}
		out = append(out, t)
	}
	return out
}

// grid adds light grid lines along the value axis only.
func grid(p *plot.Plot, vertical bool) {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = colGrid, colGrid
	if vertical {
		g.Horizontal.Color = nil
	} else {
		g.Vertical.Color = nil
	}
	p.Add(g)
}

// svgHeader matches what vgsvg writes before the drawing: the XML
// declaration, a comment and the opening tag with its size and namespaces.
var svgHeader = regexp.MustCompile(`(?s)\A<\?xml[^>]*\?>\s*(<!--.*?-->\s*)?<svg width="([0-9.]+)pt" height="([0-9.]+)pt" viewBox="([^"]*)"\s+xmlns="[^"]*"\s+xmlns:xlink="[^"]*">`)

// render draws p into inline SVG markup. The SVG is trusted HTML: vgsvg
// escapes every string it draws with html.EscapeString.
func render(p *plot.Plot, w, h vg.Length, label string) (c chart) {
	defer func() {
		// gonum/plot panics on degenerate data it cannot lay out; the
		// report says so rather than failing.
		if r := recover(); r != nil {
			c = chart{Skip: fmt.Sprintf("The chart could not be drawn (%v).", r)}
		}
	}()
	cv := vgsvg.New(w, h)
	p.Draw(draw.New(cv))
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return chart{Skip: fmt.Sprintf("The chart could not be drawn (%v).", err)}
	}
	s := buf.String()
	m := svgHeader.FindStringSubmatchIndex(s)
	if m == nil {
		return chart{Skip: "The chart could not be drawn (unexpected SVG from gonum/plot)."}
	}
	// In HTML the parser puts <svg> in the SVG namespace; no xmlns (and
	// so no URL) is needed. The size comes from CSS (width 100%, height
	// from the viewBox's aspect ratio).
	open := fmt.Sprintf(`<svg class="chart" viewBox="%s" width="%s" height="%s" role="img" aria-label="%s">`,
		s[m[8]:m[9]], s[m[4]:m[5]], s[m[6]:m[7]], template.HTMLEscapeString(label))
	body := s[m[1]:]
	// Let the browser fall back to a metric-compatible font if the
	// embedded one is missing (the pattern cannot occur in escaped text:
	// its quote would be &#34;).
	body = strings.ReplaceAll(body, `style="font-family:Liberation Sans;`, `style="font-family:'Liberation Sans',Arial,Helvetica,sans-serif;`)
	return chart{SVG: template.HTML(open + body)}
}

// rowsHeight is the height of a horizontal chart with n rows.
func rowsHeight(n int, per vg.Length) vg.Length {
	return vg.Points(70) + vg.Length(n)*per
}

// errPoints are points with asymmetric X errors.
type errPoints struct {
	plotter.XYs
	plotter.XErrors
}

// intervalBars draws one kind of interval as horizontal error bars at
// y + dy for each row that has it.
func intervalBars(ivs []*metrics.Interval, values []float64, dy float64, col color.Color, dashed bool) (*plotter.XErrorBars, error) {
	var pts errPoints
	for i, iv := range ivs {
		if iv == nil || math.IsNaN(values[i]) || !finite(iv.Lo, iv.Hi) {
			continue
		}
		v := values[i]
		pts.XYs = append(pts.XYs, plotter.XY{X: v, Y: float64(i) + dy})
		pts.XErrors = append(pts.XErrors, struct{ Low, High float64 }{math.Max(0, v-iv.Lo), math.Max(0, iv.Hi-v)})
	}
	if len(pts.XYs) == 0 {
		return nil, nil
	}
	eb, err := plotter.NewXErrorBars(pts)
	if err != nil {
		return nil, err
	}
	eb.LineStyle.Color = col
	eb.LineStyle.Width = vg.Points(1.6)
	eb.CapWidth = vg.Points(6)
	if dashed {
		eb.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	}
	return eb, nil
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// valueRange makes the value axis cover [0, 1] and every interval.
func valueRange(p *plot.Plot, scores []metrics.Score) {
	lo, hi := 0.0, 1.0
	for _, s := range scores {
		for _, iv := range []*metrics.Interval{s.CLT, s.Bootstrap} {
			if iv != nil && finite(iv.Lo, iv.Hi) {
				lo, hi = math.Min(lo, iv.Lo), math.Max(hi, iv.Hi)
			}
		}
		if s.Value != nil && finite(*s.Value) {
			lo, hi = math.Min(lo, *s.Value), math.Max(hi, *s.Value)
		}
	}
	p.X.Min, p.X.Max = lo, hi+(hi-lo)*0.02
}

// scoreRows plots labelled scores top to bottom, each a point (or a bar)
// with its CLT interval above and its bootstrap interval below.
func scoreChart(labels []string, scores []metrics.Score, bars bool, xlabel, what string, w vg.Length) chart {
	n := len(scores)
	var ys []int // row index (top first) of each defined score
	for i, s := range scores {
		if s.Value != nil && finite(*s.Value) {
			ys = append(ys, i)
		}
	}
	if len(ys) == 0 {
		return chart{Skip: "No " + what + " has a value, so there is nothing to plot."}
	}
	// Rows bottom-up for gonum's axis: row r of the chart is scores[n-1-r].
	names := make([]string, n)
	values := make([]float64, n)
	clt := make([]*metrics.Interval, n)
	boot := make([]*metrics.Interval, n)
	for i, s := range scores {
		r := n - 1 - i
		names[r] = shorten(labels[i], 28)
		values[r] = math.NaN()
		if s.Value != nil && finite(*s.Value) {
			values[r] = *s.Value
		}
		clt[r], boot[r] = s.CLT, s.Bootstrap
	}
	p := newPlot()
	grid(p, true)
	p.X.Label.Text = xlabel
	if bars {
		vals := make(plotter.Values, n)
		for i, v := range values {
			if !math.IsNaN(v) {
				vals[i] = v
			}
		}
		bc, err := plotter.NewBarChart(vals, vg.Points(18))
		if err != nil {
			return chart{Skip: "The chart could not be drawn (" + err.Error() + ")."}
		}
		bc.Horizontal = true
		bc.Color = colBar
		bc.LineStyle.Width = 0
		p.Add(bc)
	}
	for _, x := range []struct {
		ivs    []*metrics.Interval
		dy     float64
		col    color.Color
		dashed bool
	}{{clt, 0.14, colCLT, false}, {boot, -0.14, colBootstrap, true}} {
		eb, err := intervalBars(x.ivs, values, x.dy, x.col, x.dashed)
		if err != nil {
			return chart{Skip: "The chart could not be drawn (" + err.Error() + ")."}
		}
		if eb != nil {
			p.Add(eb)
		}
	}
	var pts plotter.XYs
	for r, v := range values {
		if !math.IsNaN(v) {
			pts = append(pts, plotter.XY{X: v, Y: float64(r)})
		}
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return chart{Skip: "The chart could not be drawn (" + err.Error() + ")."}
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: colPoint, Radius: vg.Points(3.2), Shape: draw.CircleGlyph{}}
	if bars {
		sc.GlyphStyle = draw.GlyphStyle{Color: colPoint, Radius: vg.Points(1.2), Shape: draw.BoxGlyph{}}
	}
	p.Add(sc)
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	valueRange(p, scores)
	// Rows without a value say so where their point would be.
	var na plotter.XYLabels
	for r, v := range values {
		if math.IsNaN(v) {
			na.XYs = append(na.XYs, plotter.XY{X: p.X.Min, Y: float64(r)})
			na.Labels = append(na.Labels, " n/a")
		}
	}
	if len(na.XYs) > 0 {
		l, err := plotter.NewLabels(na)
		if err != nil {
			return chart{Skip: "The chart could not be drawn (" + err.Error() + ")."}
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font = font.From(sans, 9)
			l.TextStyle[i].Color = colAxis
			l.TextStyle[i].YAlign = draw.YCenter
		}
		p.Add(l)
	}
	return render(p, w, rowsHeight(n, vg.Points(26)), xlabel+" by "+what)
}

// shorten cuts a label to n runes.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// suiteChart is the headline of every benchmark with both intervals.
func suiteChart(suite []*metrics.Bundle) chart {
	if len(suite) == 0 {
		return chart{Skip: "No benchmarks."}
	}
	labels := make([]string, len(suite))
	scores := make([]metrics.Score, len(suite))
	for i, b := range suite {
		h := view.HeadlineScore(b)
		labels[i] = view.Key(b) + " · " + h.Metric
		scores[i] = h
		if b.Validity.Invalid {
			// No point, no interval: an INVALID benchmark has no score.
			labels[i] = view.Key(b) + " · " + view.Invalid
			scores[i] = metrics.Score{Metric: h.Metric}
		}
	}
	return scoreChart(labels, scores, false, "score", "benchmark", fullWidth)
}

// categoryChart is the headline per category of one benchmark.
func categoryChart(b *metrics.Bundle) chart {
	if len(b.Categories) == 0 {
		return chart{Skip: "This benchmark has no categories."}
	}
	labels := make([]string, len(b.Categories))
	scores := make([]metrics.Score, len(b.Categories))
	for i, c := range b.Categories {
		labels[i], scores[i] = c.Name, c.Score
	}
	return scoreChart(labels, scores, true, view.HeadlineScore(b).Metric, "category", halfWidth)
}

// latencyChart is the latency histogram with the percentiles marked, or
// the percentiles as bars when the bundle has no histogram.
func latencyChart(b *metrics.Bundle) chart {
	l := b.Runtime.LatencyMS
	if b.Samples == 0 || (l.Max <= 0 && l.P99 <= 0) {
		return chart{Skip: "No latency was recorded."}
	}
	p := newPlot()
	grid(p, false)
	p.Y.Label.Text = "samples"
	p.Y.Tick.Marker = cleanTicks{counts: true}
	p.X.Label.Text = "latency (ms)"
	total := 0
	for _, c := range l.Histogram {
		total += c
	}
	if l.BucketMS > 0 && total > 0 {
		h := &plotter.Histogram{FillColor: colBar, Width: l.BucketMS}
		h.LineStyle.Width = vg.Points(0.5)
		h.LineStyle.Color = color.White
		top := 0.0
		for i, c := range l.Histogram {
			lo := float64(i) * l.BucketMS
			h.Bins = append(h.Bins, plotter.HistogramBin{Min: lo, Max: lo + l.BucketMS, Weight: float64(c)})
			top = math.Max(top, float64(c))
		}
		p.Add(h)
		for _, m := range []struct {
			name string
			x    float64
			col  color.Color
			dash []vg.Length
		}{
			{"p50 " + view.MS(l.P50), l.P50, colP50, nil},
			{"p90 " + view.MS(l.P90), l.P90, colP90, []vg.Length{vg.Points(5), vg.Points(2)}},
			{"p99 " + view.MS(l.P99), l.P99, colP99, []vg.Length{vg.Points(2), vg.Points(2)}},
		} {
			ln, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: 0}, {X: m.x, Y: top * 1.05}})
			if err != nil {
				return chart{Skip: "The chart could not be drawn (" + err.Error() + ")."}
			}
			ln.LineStyle = draw.LineStyle{Color: m.col, Width: vg.Points(1.8), Dashes: m.dash}
			p.Add(ln)
			p.Legend.Add(m.name, ln)
		}
		p.Legend.Top = true
		p.Legend.XOffs = -vg.Points(6)
		p.Y.Min, p.Y.Max = 0, top*1.5 // headroom for the legend
		p.X.Min = 0
		p.Title.Text = fmt.Sprintf("buckets of %s; the last also holds everything slower", view.MS(l.BucketMS))
		p.Title.TextStyle.Font = font.From(sans, 9)
		p.Title.TextStyle.Color = colAxis
		return render(p, halfWidth, 3*vg.Inch, "latency histogram")
	}
	names := []string{"p50", "p90", "p99", "mean", "max"}
	vals := plotter.Values{l.P50, l.P90, l.P99, l.Mean, l.Max}
	bc, err := plotter.NewBarChart(vals, vg.Points(36))
	if err != nil {
		return chart{Skip: "The chart could not be drawn (" + err.Error() + ")."}
	}
	bc.Color = colBar
	bc.LineStyle.Width = 0
	p.Add(bc)
	p.NominalX(names...)
	p.X.Label.Text = "latency statistic (no histogram in the bundle)"
	p.Y.Label.Text = "ms"
	p.Y.Min = 0
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	return render(p, halfWidth, 2.6*vg.Inch, "latency percentiles")
}

// failureChart is the count of each model-error category.
func failureChart(b *metrics.Bundle) chart {
	f := b.Failures
	switch {
	case f.Failed == 0:
		return chart{Skip: "No model errors."}
	case len(f.Categories) == 0:
		return chart{Skip: "The bundle records no model-error categories."}
	}
	n := len(f.Categories)
	names := make([]string, n)
	vals := make(plotter.Values, n)
	for i, fc := range f.Categories {
		names[n-1-i] = shorten(fc.Category, 28)
		vals[n-1-i] = float64(fc.Count)
	}
	bc, err := plotter.NewBarChart(vals, vg.Points(18))
	if err != nil {
		return chart{Skip: "The chart could not be drawn (" + err.Error() + ")."}
	}
	bc.Horizontal = true
	bc.Color = colFail
	bc.LineStyle.Width = 0
	p := newPlot()
	grid(p, true)
	p.Add(bc)
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.X.Min = 0
	p.X.Tick.Marker = cleanTicks{counts: true}
	p.X.Label.Text = "model errors"
	return render(p, halfWidth, rowsHeight(n, vg.Points(24)), "model errors by category")
}
