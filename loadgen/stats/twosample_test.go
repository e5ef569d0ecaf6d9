package stats

import (
	"math"
	"testing"
)

// TestBootstrapRatioOfMedians: the ratio is median(b) / median(a); the
// interval holds it, is a function of the stream, and needs two usable
// rounds on each side.
func TestBootstrapRatioOfMedians(t *testing.T) {
	a := []float64{100, 102, 98, 101, 99}
	b := []float64{200, 204, 196, 202, 198, 0} // the 0 round measured nothing
	got := BootstrapRatioOfMedians(a, b, 2000, 0.95, 7)
	if got.Median != 2 || !got.Contains(2) || got.Low < 1.9 || got.High > 2.1 {
		t.Errorf("ratio of medians %+v, want 2 within [1.9, 2.1]", got)
	}
	if again := BootstrapRatioOfMedians(a, b, 2000, 0.95, 7); again != got {
		t.Errorf("same stream, different interval: %+v, %+v", got, again)
	}
	for _, sides := range [][2][]float64{{a, {200}}, {{100, 0}, b}, {nil, b}} {
		if one := BootstrapRatioOfMedians(sides[0], sides[1], 2000, 0.95, 7); !math.IsNaN(one.Median) || !math.IsNaN(one.Low) {
			t.Errorf("%v over %v: %+v, want no interval", sides[1], sides[0], one)
		}
	}
	if UsableCount([]float64{1, 0, math.NaN(), math.Inf(1), 2}) != 2 {
		t.Error("UsableCount counts values that are not positive finite numbers")
	}
}

func TestWiderBand(t *testing.T) {
	got := WiderBand(Interval{Median: 1, Low: 0.9, High: 1.05}, Interval{Median: 1, Low: 0.95, High: 1.2})
	if got.Low != 0.9 || got.High != 1.2 {
		t.Errorf("WiderBand = %+v, want [0.9, 1.2]", got)
	}
}
