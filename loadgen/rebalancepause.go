package loadgen

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// The rebalance pause of a group-churn run: how long a churning group
// went without committing after its membership changed.
//
//   - A commit is a member's committed poll: a transaction that committed
//     (eos-pipeline), a database transaction with its offsets
//     (consumer-dedup, external-offsets) or an offset commit after the
//     poll's records were acknowledged (the relay). The commits of all
//     members of one stage's group are merged in time order.
//   - A churn event is a membership change the load generator makes: a
//     wave of workers starting to join the group, or a worker leaving it
//     (at the moment it ended its last transaction with an abort, before
//     it sent its leave). Only events during the load count (after its
//     clock started, before the producers' deadline).
//   - An event's pause is the longest interval with no commit by any
//     member of its group within the window that follows it: from the
//     event to the first commit after it, then between successive
//     commits, while an interval begins before the window ends. The
//     window is the churn period (the plan's every): a pause that begins
//     later belongs to a later event. An interval that begins inside the
//     window counts whole, even when its commit comes after the window
//     ends; after the last commit of the run nothing counts (an idle
//     group after the drain is not paused).
//
// Every event gets a pause (a short one when the group kept committing:
// about the normal gap between two commits, reported beside it). Events
// close together (a phase ending: a wave joins and every worker of the
// phase before leaves) often find the same stretch: events whose longest
// interval ends at the same commit share one pause, counted once, from
// the earliest of their starts. The total paused time counts each
// instant once (the union of the pauses), summed over the stages'
// groups.

// commitTimeline collects one stage group's commit and churn-event times
// from its workers' goroutines; mu guards both.
type commitTimeline struct {
	mu      sync.Mutex
	commits []time.Time
	events  []time.Time
}

func (t *commitTimeline) commit(at time.Time) {
	t.mu.Lock()
	t.commits = append(t.commits, at)
	t.mu.Unlock()
}

func (t *commitTimeline) event(at time.Time) {
	t.mu.Lock()
	t.events = append(t.events, at)
	t.mu.Unlock()
}

// snapshot returns copies of the times, each sorted.
func (t *commitTimeline) snapshot() (commits, events []time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	commits, events = slices.Clone(t.commits), slices.Clone(t.events)
	slices.SortFunc(commits, time.Time.Compare)
	slices.SortFunc(events, time.Time.Compare)
	return commits, events
}

// pauseInterval is one event's pause: [from, to) with no commit.
type pauseInterval struct{ from, to time.Time }

func (p pauseInterval) length() time.Duration { return p.to.Sub(p.from) }

// rebalancePauses returns the pauses of the events in [start, end) (the
// load's clock), given the group's commits, both sorted, and the window:
// one per distinct stretch, in time order, and how many events were
// measured.
func rebalancePauses(commits, events []time.Time, start, end time.Time, window time.Duration) (pauses []pauseInterval, measured int) {
	for _, at := range events {
		if at.Before(start) || !at.Before(end) {
			continue
		}
		windowEnd := at.Add(window)
		next := sort.Search(len(commits), func(i int) bool { return commits[i].After(at) })
		longest := pauseInterval{from: at, to: at}
		for from := at; next < len(commits) && from.Before(windowEnd); next++ {
			if gap := (pauseInterval{from: from, to: commits[next]}); gap.length() > longest.length() {
				longest = gap
			}
			from = commits[next]
		}
		measured++
		switch {
		case longest.length() <= 0: // no commit after it in the run
		case len(pauses) > 0 && pauses[len(pauses)-1].to.Equal(longest.to):
			// The same stretch as the event before (events are sorted, so
			// the earlier start is the one kept).
		default:
			pauses = append(pauses, longest)
		}
	}
	return pauses, measured
}

// unionLength is the time the intervals cover, each instant once.
func unionLength(intervals []pauseInterval) time.Duration {
	sorted := slices.Clone(intervals)
	slices.SortFunc(sorted, func(a, b pauseInterval) int { return a.from.Compare(b.from) })
	var total time.Duration
	var reach time.Time
	for _, interval := range sorted {
		from := interval.from
		if from.Before(reach) {
			from = reach
		}
		if interval.to.After(from) {
			total += interval.to.Sub(from)
			reach = interval.to
		}
	}
	return total
}

// medianGap is the median interval between successive commits in
// [start, end), 0 with fewer than two.
func medianGap(commits []time.Time, start, end time.Time) time.Duration {
	var gaps []time.Duration
	for i := 1; i < len(commits); i++ {
		if !commits[i-1].Before(start) && commits[i].Before(end) {
			gaps = append(gaps, commits[i].Sub(commits[i-1]))
		}
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}

// summarizePauses pools the pauses of every stage's group of a run into
// its results' figures.
func summarizePauses(timelines []*commitTimeline, start, end time.Time, window time.Duration) *report.RebalancePauses {
	summary := &report.RebalancePauses{WindowMs: milliseconds(window), PausesMs: []float64{}}
	var lengths []float64
	var gaps []float64
	for _, timeline := range timelines {
		commits, events := timeline.snapshot()
		pauses, measured := rebalancePauses(commits, events, start, end, window)
		summary.Events += measured
		summary.TotalMs += milliseconds(unionLength(pauses))
		for _, pause := range pauses {
			lengths = append(lengths, milliseconds(pause.length()))
		}
		if gap := medianGap(commits, start, end); gap > 0 {
			gaps = append(gaps, milliseconds(gap))
		}
	}
	summary.PausesMs = append(summary.PausesMs, lengths...)
	summary.Pauses = len(lengths)
	if len(lengths) > 0 {
		sorted := slices.Clone(lengths)
		slices.Sort(sorted)
		summary.MedianMs = quantile(sorted, 0.5)
		summary.P99Ms = quantile(sorted, 0.99)
		summary.MaxMs = sorted[len(sorted)-1]
	}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		summary.NormalGapMs = quantile(gaps, 0.5)
	}
	return summary
}

// quantile of sorted values, interpolated between the nearest ranks.
func quantile(sorted []float64, q float64) float64 {
	position := q * float64(len(sorted)-1)
	low := int(position)
	if low+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[low] + (sorted[low+1]-sorted[low])*(position-float64(low))
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
