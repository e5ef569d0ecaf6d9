// Package stats holds the statistics the load generator reports overheads
// with: the median of paired per-round ratios and its bootstrap confidence
// interval, and the verdict drawn from that interval. Everything here is a
// pure function of its inputs; the bootstrap draws from a random stream
// the caller numbers, so the same rounds give the same interval every time.
package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Verdicts of a ratio's interval.
const (
	// Faster: the whole interval is on the better side of 1.0.
	Faster = "faster"
	// Slower: the whole interval is on the worse side of 1.0.
	Slower = "slower"
	// WithinNoise: the interval contains 1.0 (or there is no interval):
	// the rounds do not show a difference.
	WithinNoise = "within noise"
)

// Median returns the median of values (the mean of the middle two for an
// even count), or NaN when values is empty. values is not modified.
func Median(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	middle := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[middle]
	}
	return (sorted[middle-1] + sorted[middle]) / 2
}

// Ratios divides each value by the baseline of the same round:
// ratios[i] = values[i] / baselines[i]. Rounds where either side is not a
// positive finite number are left out (a round that measured nothing
// says nothing about the ratio).
func Ratios(values, baselines []float64) []float64 {
	var ratios []float64
	for i := range min(len(values), len(baselines)) {
		if usable(values[i]) && usable(baselines[i]) {
			ratios = append(ratios, values[i]/baselines[i])
		}
	}
	return ratios
}

func usable(value float64) bool { return value > 0 && !math.IsInf(value, 0) && !math.IsNaN(value) }

// Interval is a median with its bootstrap confidence interval.
type Interval struct {
	// Median is the median of the samples.
	Median float64
	// Low and High bound the interval: the (1-level)/2 and (1+level)/2
	// quantiles of the medians of the resamples.
	Low, High float64
}

// Contains reports whether x lies in the closed interval.
func (i Interval) Contains(x float64) bool { return i.Low <= x && x <= i.High }

// BootstrapMedian resamples samples with replacement resamples times
// (each resample as many draws as samples), takes each resample's median,
// and returns the median of samples with the percentile interval of
// those medians at level (0.95 for a 95 % interval). The generator is
// started from stream, so the result is a function of its arguments. With
// no samples every field is NaN.
//
// Resampling rounds, not records, is the point: each sample is one
// round's ratio, and the spread between rounds is the noise of the
// machine (other processes, caches, GC) that a single long run hides.
func BootstrapMedian(samples []float64, resamples int, level float64, stream uint64) Interval {
	if len(samples) == 0 {
		return Interval{Median: math.NaN(), Low: math.NaN(), High: math.NaN()}
	}
	resamples = max(resamples, 1)
	random := rand.New(rand.NewPCG(stream, stream^0x9e3779b97f4a7c15))
	medians := make([]float64, resamples)
	draw := make([]float64, len(samples))
	for r := range medians {
		for i := range draw {
			draw[i] = samples[random.IntN(len(samples))]
		}
		medians[r] = Median(draw)
	}
	slices.Sort(medians)
	return Interval{Median: Median(samples), Low: quantile(medians, (1-level)/2), High: quantile(medians, (1+level)/2)}
}

// quantile returns the q-quantile of sorted values (linear interpolation
// between closest ranks).
func quantile(sorted []float64, q float64) float64 {
	q = min(max(q, 0), 1)
	position := q * float64(len(sorted)-1)
	lower := int(math.Floor(position))
	upper := min(lower+1, len(sorted)-1)
	fraction := position - float64(lower)
	return sorted[lower] + fraction*(sorted[upper]-sorted[lower])
}

// Verdict judges a ratio's interval against 1.0: Faster or Slower only
// when the whole interval lies on one side, WithinNoise when it contains
// 1.0 or is not a number. higherIsBetter says which side is better
// (throughput: true; latency: false).
func Verdict(interval Interval, higherIsBetter bool) string {
	if math.IsNaN(interval.Low) || math.IsNaN(interval.High) || interval.Contains(1) {
		return WithinNoise
	}
	above := interval.Low > 1
	if above == higherIsBetter {
		return Faster
	}
	return Slower
}

// NoiseBand widens the A/A interval (the baseline against itself) into
// the band of ratios a difference must leave to count: symmetric around 1
// in ratio terms, so that an A/A reading of 1.2 also makes 1/1.2 noise.
// The A/A interval is what two identical configurations measure apart on
// this machine; with few rounds the percentile bootstrap can exclude 1
// even for the A/A (it under-covers), and the band covers that too.
func NoiseBand(aa Interval) Interval {
	if math.IsNaN(aa.Low) || math.IsNaN(aa.High) || aa.Low <= 0 || aa.High <= 0 {
		return Interval{Median: 1, Low: 1, High: 1}
	}
	return Interval{Median: 1, Low: min(aa.Low, 1/aa.High, 1), High: max(aa.High, 1/aa.Low, 1)}
}

// VerdictBeyond is Verdict with a noise band: Faster or Slower only when
// the interval lies wholly outside band (and so excludes 1 as well);
// WithinNoise when it contains 1 or touches the band.
func VerdictBeyond(interval, band Interval, higherIsBetter bool) string {
	verdict := Verdict(interval, higherIsBetter)
	if verdict == WithinNoise || interval.High < band.Low || interval.Low > band.High {
		return verdict
	}
	return WithinNoise
}
