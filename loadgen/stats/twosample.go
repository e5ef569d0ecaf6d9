package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// BootstrapRatioOfMedians compares two independent sets of rounds, a and
// b (two results files, not paired by round): it returns median(b) /
// median(a) with the percentile interval at level of median(b*) /
// median(a*), where each resample draws a* from a and b* from b
// independently, with replacement, as many draws as each set has. Values
// that are not positive finite numbers are left out first (a round that
// measured nothing says nothing). The generator is started from stream, so
// the result is a function of its arguments. With fewer than two usable
// values on either side every field is NaN: one round has no spread to
// resample, so there is no interval.
func BootstrapRatioOfMedians(a, b []float64, resamples int, level float64, stream uint64) Interval {
	a, b = usableValues(a), usableValues(b)
	if len(a) < 2 || len(b) < 2 {
		return Interval{Median: math.NaN(), Low: math.NaN(), High: math.NaN()}
	}
	resamples = max(resamples, 1)
	random := rand.New(rand.NewPCG(stream, stream^0x2545f4914f6cdd1d))
	ratios := make([]float64, resamples)
	drawA, drawB := make([]float64, len(a)), make([]float64, len(b))
	for r := range ratios {
		for i := range drawA {
			drawA[i] = a[random.IntN(len(a))]
		}
		for i := range drawB {
			drawB[i] = b[random.IntN(len(b))]
		}
		ratios[r] = Median(drawB) / Median(drawA)
	}
	slices.Sort(ratios)
	return Interval{Median: Median(b) / Median(a), Low: quantile(ratios, (1-level)/2), High: quantile(ratios, (1+level)/2)}
}

// UsableCount is how many of values are positive finite numbers, the
// rounds [BootstrapRatioOfMedians] keeps.
func UsableCount(values []float64) int { return len(usableValues(values)) }

func usableValues(values []float64) []float64 {
	var kept []float64
	for _, value := range values {
		if usable(value) {
			kept = append(kept, value)
		}
	}
	return kept
}

// WiderBand is the union of two noise bands (see [NoiseBand]): the lower
// of the lows and the higher of the highs.
func WiderBand(a, b Interval) Interval {
	return Interval{Median: 1, Low: min(a.Low, b.Low), High: max(a.High, b.High)}
}
