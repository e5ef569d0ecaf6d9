package loadgen

import (
	"slices"
	"testing"
	"time"
)

// every returns the times from..to (exclusive) step ms apart, in ms.
func every(from, to, step int) []int {
	var times []int
	for at := from; at < to; at += step {
		times = append(times, at)
	}
	return times
}

// A rebalance pause is, per churn event, the longest stretch without a
// commit in the window after it (from the event to the first commit, then
// between commits, while a stretch begins inside the window); events that
// find the same stretch share one pause.
func TestRebalancePauses(t *testing.T) {
	t.Parallel()
	base := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name          string
		commits       []int // ms
		events        []int // ms
		start, end    int   // the load's clock, ms
		window        int   // ms
		want          [][2]int
		wantEventsSaw int
	}{
		{name: "the group kept committing: the pause is the normal gap",
			commits: every(0, 2000, 10), events: []int{105}, end: 2000, window: 500,
			want: [][2]int{{110, 120}}, wantEventsSaw: 1},
		{name: "commits stop after the event: from the last commit to the next",
			commits: append(every(0, 30, 10), every(1020, 2000, 10)...), events: []int{15}, end: 2000, window: 500,
			want: [][2]int{{20, 1020}}, wantEventsSaw: 1},
		{name: "commits stopped before the event: from the event to the first commit",
			commits: append(every(0, 30, 10), every(1000, 2000, 10)...), events: []int{300}, end: 2000, window: 500,
			want: [][2]int{{300, 1000}}, wantEventsSaw: 1},
		{name: "a stretch beginning after the window belongs to a later event",
			commits: append(every(0, 210, 10), every(1200, 2000, 10)...), events: []int{0}, end: 2000, window: 100,
			want: [][2]int{{0, 10}}, wantEventsSaw: 1},
		{name: "a stretch beginning inside the window counts whole",
			commits: append(every(0, 100, 10), every(3000, 4000, 10)...), events: []int{0}, end: 4000, window: 100,
			want: [][2]int{{90, 3000}}, wantEventsSaw: 1},
		{name: "events finding the same stretch share one pause, from the earliest start",
			commits: append(every(0, 30, 10), every(1000, 2000, 10)...), events: []int{15, 18, 40, 60}, end: 2000, window: 500,
			want: [][2]int{{20, 1000}}, wantEventsSaw: 4},
		{name: "two stretches, two pauses",
			commits: slices.Concat(every(0, 30, 10), every(500, 2030, 10), every(2800, 4000, 10)),
			events:  []int{25, 2025}, end: 4000, window: 300,
			want: [][2]int{{25, 500}, {2025, 2800}}, wantEventsSaw: 2},
		{name: "events outside the load are not measured",
			commits: every(0, 3000, 10), events: []int{50, 2500}, start: 100, end: 2000, window: 300,
			want: nil, wantEventsSaw: 0},
		{name: "no commit after the event: measured, no pause",
			commits: every(0, 100, 10), events: []int{500}, end: 2000, window: 300,
			want: nil, wantEventsSaw: 1},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			var commits, events []time.Time
			for _, ms := range test.commits {
				commits = append(commits, at(ms))
			}
			for _, ms := range test.events {
				events = append(events, at(ms))
			}
			pauses, measured := rebalancePauses(commits, events, at(test.start), at(test.end), time.Duration(test.window)*time.Millisecond)
			var got [][2]int
			for _, pause := range pauses {
				got = append(got, [2]int{int(pause.from.Sub(base).Milliseconds()), int(pause.to.Sub(base).Milliseconds())})
			}
			if !slices.Equal(got, test.want) || measured != test.wantEventsSaw {
				t.Fatalf("pauses %v after %d events, want %v after %d", got, measured, test.want, test.wantEventsSaw)
			}
		})
	}
}

// The run's figures pool the stages' groups: the total counts each
// instant once per group, the median is over the pauses.
func TestSummarizePauses(t *testing.T) {
	t.Parallel()
	base := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	stage := func(commits []int, events ...int) *commitTimeline {
		timeline := &commitTimeline{}
		for _, ms := range commits {
			timeline.commit(at(ms))
		}
		for _, ms := range events {
			timeline.event(at(ms))
		}
		return timeline
	}
	first := stage(slices.Concat(every(0, 30, 10), every(1000, 5000, 10)), 15, 18)  // one pause: 20→1000
	second := stage(slices.Concat(every(0, 2000, 10), every(2400, 5000, 10)), 1995) // one pause: 1995→2400
	summary := summarizePauses([]*commitTimeline{first, second}, at(0), at(5000), 500*time.Millisecond)
	if summary.Events != 3 || summary.Pauses != 2 || summary.MaxMs != 980 || summary.TotalMs != 980+405 ||
		summary.MedianMs != (980+405)/2.0 || summary.NormalGapMs != 10 {
		t.Fatalf("summary %+v", summary)
	}
}

// unionLength counts overlapping pauses once.
func TestUnionLength(t *testing.T) {
	t.Parallel()
	base := time.Unix(1_700_000_000, 0)
	span := func(from, to int) pauseInterval {
		return pauseInterval{from: base.Add(time.Duration(from) * time.Millisecond), to: base.Add(time.Duration(to) * time.Millisecond)}
	}
	if got := unionLength([]pauseInterval{span(500, 900), span(0, 100), span(50, 300), span(800, 1000)}); got != 800*time.Millisecond {
		t.Fatalf("union %s, want 800ms", got)
	}
}
