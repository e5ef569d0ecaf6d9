package report

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chartView is one rendered chart of the page: the inline SVG, or a note
// saying why there is none.
type chartView struct {
	// ID is the chart's data-chart attribute, stable for tests and links.
	ID    string
	Title string
	SVG   template.HTML
	// Note says what the chart leaves out, or why it is missing.
	Note string
	// Legend is drawn in HTML under the chart, so it never hides data.
	Legend []legendEntry
}

// legendEntry names one series of a chart.
type legendEntry struct {
	Name   string
	Color  string // CSS colour
	Dashed bool
}

// Chart sizes. Wide charts take the page width; panel charts sit side by
// side, one per results file.
const (
	wideWidth   = 11 * vg.Inch
	wideHeight  = 4 * vg.Inch
	panelWidth  = 6.5 * vg.Inch
	panelHeight = 4 * vg.Inch
)

// seriesPalette colours runs (by name, the same on every chart of a page);
// filePalette colours results files in charts that compare files.
var (
	seriesPalette = []color.RGBA{
		{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff}, {0x76, 0xb7, 0xb2, 0xff},
		{0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff}, {0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff},
		{0x9c, 0x75, 0x5f, 0xff}, {0x79, 0x70, 0x6e, 0xff},
	}
	filePalette = []color.RGBA{
		{0x1f, 0x3b, 0x73, 0xff}, {0xd9, 0x5f, 0x02, 0xff}, {0x1b, 0x9e, 0x77, 0xff}, {0x75, 0x70, 0xb3, 0xff},
		{0xe7, 0x29, 0x8a, 0xff}, {0x66, 0xa6, 0x1e, 0xff},
	}
)

func seriesColor(index int) color.Color { return seriesPalette[index%len(seriesPalette)] }
func fileColor(index int) color.Color   { return filePalette[index%len(filePalette)] }

// newPlot returns a plot with sans-serif text and a grid; legends are
// drawn in HTML (chartView.Legend).
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xLabel, yLabel
	for _, style := range []*draw.TextStyle{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label} {
		style.Font.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Y.Tick.Marker = humanTicks{}
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 0xe0}
	grid.Horizontal.Color = color.Gray{Y: 0xe0}
	p.Add(grid)
	return p
}

// renderChart draws p as SVG for inlining into HTML: the XML prolog is
// dropped and the element is labelled for screen readers. gonum/plot
// panics on some inputs (a log axis over a non-positive value); that
// becomes an error, and the page shows a note instead of the chart.
func renderChart(p *plot.Plot, width, height vg.Length) (svg template.HTML, err error) {
	defer func() {
		if recovered := recover(); recovered != nil {
			svg, err = "", fmt.Errorf("draw chart %q: %v", p.Title.Text, recovered)
		}
	}()
	canvas := vgsvg.New(width, height)
	p.Draw(draw.New(canvas))
	var buffer bytes.Buffer
	if _, err := canvas.WriteTo(&buffer); err != nil {
		return "", fmt.Errorf("write chart %q: %w", p.Title.Text, err)
	}
	text := buffer.String()
	start := strings.Index(text, "<svg")
	if start < 0 {
		return "", fmt.Errorf("write chart %q: no <svg> element in the output", p.Title.Text)
	}
	label := fmt.Sprintf(`<svg role="img" aria-label="%s"`, html.EscapeString(p.Title.Text))
	// The SVG is gonum/plot's output: numbers, paths, and text it escapes
	// with html.EscapeString, so it is safe to inline as is.
	return template.HTML(label + text[start+len("<svg"):]), nil
}

// chart renders p into a chartView, keeping a note when drawing failed.
func chart(id string, p *plot.Plot, width, height vg.Length, legend []legendEntry, note string) chartView {
	view := chartView{ID: id, Title: p.Title.Text, Note: note, Legend: legend}
	svg, err := renderChart(p, width, height)
	if err != nil {
		view.Note = strings.TrimSpace(view.Note + " " + err.Error())
	}
	view.SVG = svg
	return view
}

// addLine adds a line (with point markers when points is set) to p, and
// to legend when name is not empty.
func addLine(p *plot.Plot, legend *[]legendEntry, name string, xys plotter.XYs, lineColor color.Color, dashed, points bool) error {
	line, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("line %s: %w", name, err)
	}
	line.Color, line.Width = lineColor, vg.Points(1.6)
	if dashed {
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(line)
	if points {
		scatter, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("points %s: %w", name, err)
		}
		scatter.Color, scatter.Radius = lineColor, vg.Points(2.5)
		p.Add(scatter)
	}
	if name != "" {
		*legend = append(*legend, legendEntry{Name: name, Color: cssColor(lineColor), Dashed: dashed})
	}
	return nil
}

// logTicks marks a log axis at 1, 2 and 5 times each power of ten, with
// labels on those and unlabelled minor ticks between.
type logTicks struct{}

func (logTicks) Ticks(low, high float64) []plot.Tick {
	if low <= 0 || high <= 0 || math.IsNaN(low) || math.IsNaN(high) {
		return nil
	}
	var ticks []plot.Tick
	for exponent := math.Floor(math.Log10(low)); exponent <= math.Ceil(math.Log10(high)); exponent++ {
		decade := math.Pow(10, exponent)
		for step := 1; step < 10; step++ {
			value := decade * float64(step)
			if value < low*0.999 || value > high*1.001 {
				continue
			}
			tick := plot.Tick{Value: value}
			if step == 1 || step == 2 || step == 5 {
				tick.Label = humanNumber(value)
			}
			ticks = append(ticks, tick)
		}
	}
	return ticks
}

// humanTicks are gonum's default ticks labelled 250k, 1.5M, 0.25.
type humanTicks struct{}

func (humanTicks) Ticks(low, high float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(low, high)
	for index := range ticks {
		if ticks[index].Label != "" {
			ticks[index].Label = humanNumber(ticks[index].Value)
		}
	}
	return ticks
}

// humanNumber renders value with at most three significant digits and a
// k (10^3) or M (10^6) suffix.
func humanNumber(value float64) string {
	magnitude := math.Abs(value)
	switch {
	case magnitude >= 1e6:
		return strconv.FormatFloat(value/1e6, 'g', 3, 64) + "M"
	case magnitude >= 1e3:
		return strconv.FormatFloat(value/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(value, 'g', 3, 64)
}

// percentileTicks label the x axis of a percentile spectrum, whose x is
// 1/(1-q): 1 is 0%, 10 is 90%, 100 is 99%, and so on.
func percentileTicks(high float64) plot.ConstantTicks {
	ticks := plot.ConstantTicks{{Value: 1, Label: "0%"}}
	labels := []string{"90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%", "99.99999%"}
	for index, label := range labels {
		value := math.Pow(10, float64(index+1))
		if value > high*1.001 {
			break
		}
		ticks = append(ticks, plot.Tick{Value: value, Label: label})
	}
	return ticks
}

// setLogY puts p's y axis on a log scale over [low, high], widened to at
// least one decade so that a flat series still draws.
func setLogY(p *plot.Plot, low, high float64) {
	low, high = logRange(low, high)
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	p.Y.Min, p.Y.Max = low, high
}

// setLogX is setLogY for the x axis.
func setLogX(p *plot.Plot, low, high float64) {
	low, high = logRange(low, high)
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
	p.X.Min, p.X.Max = low, high
}

// logRange widens [low, high] (positive) outwards to the nearest 1, 2 or 5
// times a power of ten, and to a factor of ten at least.
func logRange(low, high float64) (float64, float64) {
	if !(low > 0) || math.IsInf(low, 0) {
		low = 1
	}
	if !(high >= low) || math.IsInf(high, 0) {
		high = low
	}
	low, high = niceStep(low, false), niceStep(high, true)
	if high < low*10 {
		high = niceStep(low*10, true)
	}
	return low, high
}

// niceStep rounds a positive value down (or up) to 1, 2 or 5 times a power
// of ten.
func niceStep(value float64, up bool) float64 {
	decade := math.Pow(10, math.Floor(math.Log10(value)))
	steps := []float64{1, 2, 5, 10}
	if up {
		for _, step := range steps {
			if decade*step >= value*0.9999 {
				return decade * step
			}
		}
		return decade * 10
	}
	for index := len(steps) - 1; index >= 0; index-- {
		if decade*steps[index] <= value*1.0001 {
			return decade * steps[index]
		}
	}
	return decade
}

// setHeadroom leaves 8% above the highest y of the series on a linear y
// axis, so that markers at the top are not clipped.
func setHeadroom(p *plot.Plot, highest float64) {
	if highest > 0 {
		p.Y.Max = math.Max(p.Y.Max, highest*1.08)
	}
}

// positiveRange returns the smallest and largest y of the points, ignoring
// non-positive values; ok is false when there is none.
func positiveRange(series ...plotter.XYs) (low, high float64, ok bool) {
	low, high = math.Inf(1), math.Inf(-1)
	for _, xys := range series {
		for _, point := range xys {
			if point.Y > 0 {
				low, high, ok = min(low, point.Y), max(high, point.Y), true
			}
		}
	}
	return low, high, ok
}
