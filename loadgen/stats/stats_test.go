package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestMedian(t *testing.T) {
	cases := []struct {
		values []float64
		want   float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{1, 1, 1, 9}, 1},
	}
	for _, test := range cases {
		if got := Median(test.values); got != test.want {
			t.Errorf("Median(%v) = %g, want %g", test.values, got, test.want)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Errorf("Median(nil) is a number")
	}
	values := []float64{3, 1, 2}
	Median(values)
	if values[0] != 3 || values[1] != 1 {
		t.Errorf("Median sorted its argument: %v", values)
	}
}

func TestRatiosPairsRoundsAndSkipsEmptyOnes(t *testing.T) {
	got := Ratios([]float64{10, 20, 0, 30, 5}, []float64{5, 10, 10, 0, 10})
	want := []float64{2, 2, 0.5}
	if len(got) != len(want) {
		t.Fatalf("Ratios = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Ratios = %v, want %v", got, want)
		}
	}
}

// TestBootstrapIdenticalSamplesHaveZeroWidth: with no spread between
// rounds every resample has the same median.
func TestBootstrapIdenticalSamplesHaveZeroWidth(t *testing.T) {
	interval := BootstrapMedian([]float64{0.8, 0.8, 0.8, 0.8, 0.8}, 2000, 0.95, 1)
	if interval.Median != 0.8 || interval.Low != 0.8 || interval.High != 0.8 {
		t.Errorf("interval of identical samples = %+v, want 0.8 [0.8, 0.8]", interval)
	}
	if got := Verdict(interval, true); got != Slower {
		t.Errorf("verdict of 0.8 [0.8, 0.8] = %q, want %q", got, Slower)
	}
}

// TestBootstrapIsReproducible: the same samples and stream give the same
// interval; the interval brackets the median and lies within the data.
func TestBootstrapIsReproducible(t *testing.T) {
	samples := []float64{0.91, 1.04, 0.97, 1.10, 0.88, 1.01, 0.95}
	first := BootstrapMedian(samples, 2000, 0.95, 42)
	second := BootstrapMedian(samples, 2000, 0.95, 42)
	if first != second {
		t.Errorf("same stream, different intervals: %+v, %+v", first, second)
	}
	if !(first.Low <= first.Median && first.Median <= first.High) {
		t.Errorf("interval %+v does not contain its median", first)
	}
	if first.Low < 0.88 || first.High > 1.10 {
		t.Errorf("interval %+v outside the data's range [0.88, 1.10]", first)
	}
	if first.Low == first.High {
		t.Errorf("interval %+v has no width though the samples differ", first)
	}
}

// TestBootstrapCoversTheTrueMedian is the property the interval is for:
// rounds drawn from a known distribution (median 1.0 × shift), the 95 %
// interval contains the true median in about 95 % of repetitions. With
// small samples the percentile bootstrap of a median is known to
// under-cover a little, so the bound is 85 %.
func TestBootstrapCoversTheTrueMedian(t *testing.T) {
	random := rand.New(rand.NewPCG(7, 7))
	const trials, rounds, trueMedian = 400, 15, 0.9
	covered := 0
	for trial := range trials {
		samples := make([]float64, rounds)
		for i := range samples {
			samples[i] = trueMedian + random.NormFloat64()*0.05 // symmetric: median = mean = 0.9
		}
		if BootstrapMedian(samples, 1000, 0.95, uint64(trial)).Contains(trueMedian) {
			covered++
		}
	}
	if share := float64(covered) / trials; share < 0.85 {
		t.Errorf("95%% interval covered the true median in %.0f%% of %d trials, want at least 85%%", share*100, trials)
	}
}

func TestBootstrapOfNothingIsWithinNoise(t *testing.T) {
	interval := BootstrapMedian(nil, 2000, 0.95, 1)
	if !math.IsNaN(interval.Median) || !math.IsNaN(interval.Low) {
		t.Errorf("interval of no samples = %+v, want NaN", interval)
	}
	if got := Verdict(interval, true); got != WithinNoise {
		t.Errorf("verdict of no samples = %q, want %q", got, WithinNoise)
	}
}

func TestVerdict(t *testing.T) {
	cases := []struct {
		interval       Interval
		higherIsBetter bool
		want           string
	}{
		{Interval{1.02, 0.97, 1.08}, true, WithinNoise}, // spans 1.0: never a gain
		{Interval{0.98, 0.90, 1.03}, true, WithinNoise}, // spans 1.0: never a loss
		{Interval{1, 1, 1}, true, WithinNoise},          // A/A of identical rounds
		{Interval{0.97, 0.95, 1.00}, true, WithinNoise}, // touching 1.0 is not excluding it
		{Interval{1.10, 1.05, 1.20}, true, Faster},
		{Interval{0.80, 0.75, 0.85}, true, Slower},
		{Interval{1.10, 1.05, 1.20}, false, Slower}, // latency ratio above 1: slower
		{Interval{0.80, 0.75, 0.85}, false, Faster},
		{Interval{0.80, 0.75, 1.05}, false, WithinNoise},
	}
	for _, test := range cases {
		if got := Verdict(test.interval, test.higherIsBetter); got != test.want {
			t.Errorf("Verdict(%+v, higherIsBetter %v) = %q, want %q", test.interval, test.higherIsBetter, got, test.want)
		}
	}
}

func TestNoiseBand(t *testing.T) {
	cases := []struct {
		aa, want Interval
	}{
		{Interval{1, 0.8, 1.25}, Interval{1, 0.8, 1.25}},
		{Interval{1, 0.9, 1.5}, Interval{1, 1 / 1.5, 1.5}},
		{Interval{1.1, 1.05, 1.2}, Interval{1, 1 / 1.2, 1.2}}, // an A/A that excludes 1 still makes 1 noise
		{Interval{math.NaN(), math.NaN(), math.NaN()}, Interval{1, 1, 1}},
	}
	for _, test := range cases {
		got := NoiseBand(test.aa)
		if math.Abs(got.Low-test.want.Low) > 1e-12 || math.Abs(got.High-test.want.High) > 1e-12 {
			t.Errorf("NoiseBand(%+v) = %+v, want %+v", test.aa, got, test.want)
		}
	}
}

// TestVerdictBeyond: a ratio counts only when its whole interval is
// outside the A/A noise band; excluding 1 is not enough.
func TestVerdictBeyond(t *testing.T) {
	band := Interval{1, 0.85, 1.18}
	cases := []struct {
		interval       Interval
		higherIsBetter bool
		want           string
	}{
		{Interval{0.97, 0.86, 0.996}, false, WithinNoise}, // excludes 1, inside the band
		{Interval{0.80, 0.70, 0.90}, true, WithinNoise},   // straddles the band's edge
		{Interval{0.06, 0.04, 0.08}, false, Faster},       // far outside
		{Interval{1.40, 1.20, 1.60}, true, Faster},
		{Interval{0.70, 0.60, 0.84}, true, Slower},
		{Interval{1.00, 0.95, 1.05}, true, WithinNoise},
	}
	for _, test := range cases {
		if got := VerdictBeyond(test.interval, band, test.higherIsBetter); got != test.want {
			t.Errorf("VerdictBeyond(%+v, band %+v) = %q, want %q", test.interval, band, got, test.want)
		}
	}
}
