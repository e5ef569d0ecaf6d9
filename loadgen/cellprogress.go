package loadgen

import (
	"sync"
	"time"

	"github.com/exactly-eos/exactly/loadgen/progress"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// cellTracker follows one cell for the progress reporter: the phase it is
// in, since when, with what budget, and the sampler's latest second. The
// goroutine running the cell moves it from phase to phase; the status
// goroutine (run) and the sampler read and write it under mu.
type cellTracker struct {
	reporter progress.Reporter
	index    int

	mu     sync.Mutex // guards what follows
	phase  progress.Phase
	since  time.Time
	budget time.Duration
	// deadline is when producing ends and flushing begins, drain the
	// flushing budget (set by startLoad).
	deadline time.Time
	drain    time.Duration
	metrics  *runMetrics
	faults   func() int64
	latest   report.Sample
	// measured: the sampler has handed over a second of this phase.
	measured bool
}

func newCellTracker(reporter progress.Reporter, index int) *cellTracker {
	return &cellTracker{reporter: reporter, index: index, phase: progress.PhaseSettingUp, since: time.Now()}
}

// enter moves the cell to phase with budget (0: none).
func (t *cellTracker) enter(phase progress.Phase, budget time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phase, t.since, t.budget = phase, time.Now(), budget
	t.latest, t.measured = report.Sample{}, false
}

// startLoad enters the producing phase, which lasts until deadline; after
// it the producers flush within drain.
func (t *cellTracker) startLoad(start, deadline time.Time, drain time.Duration, metrics *runMetrics, faults func() int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phase, t.since, t.budget = progress.PhaseProducing, start, deadline.Sub(start)
	t.deadline, t.drain, t.metrics, t.faults = deadline, drain, metrics, faults
}

// sampled records the sampler's latest second.
func (t *cellTracker) sampled(sample report.Sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.latest, t.measured = sample, true
}

// status is the cell's state at now. Producing past its deadline is
// flushing, against the drain budget.
func (t *cellTracker) status(now time.Time) progress.Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	status := progress.Status{Cell: t.index, Phase: t.phase, Elapsed: now.Sub(t.since), Budget: t.budget}
	if t.phase == progress.PhaseProducing && !t.deadline.IsZero() && now.After(t.deadline) {
		status.Phase, status.Elapsed, status.Budget = progress.PhaseFlushing, now.Sub(t.deadline), t.drain
	}
	if t.phase == progress.PhaseProducing {
		status.RecordsPerSecond, status.MegabytesPerSecond = t.latest.RecordsPerSecond, t.latest.MegabytesPerSecond
		status.P99Milliseconds, status.Measured = t.latest.P99Milliseconds, t.measured
	}
	if t.metrics != nil {
		status.Errors, status.Retries = t.metrics.errors.Load(), t.metrics.retries.Load()
	}
	if t.faults != nil {
		status.Faults = t.faults()
	}
	return status
}

// run reports the cell's status once a second until stop is closed.
func (t *cellTracker) run(stop <-chan struct{}) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-ticker.C:
			t.reporter.Status(t.status(now))
		}
	}
}

// sampler samples a run's throughput once a second into its time series
// and hands each second to the cell's tracker; it also counts the
// acknowledged records of every timelineStep into timeline, which
// recovery times are read from. Its fields are owned by the goroutine
// running run; series and timeline may be read after run returns.
type sampler struct {
	start    time.Time
	metrics  *runMetrics
	tracker  *cellTracker
	series   []report.Sample
	timeline []int64
}

// timelineStep is the resolution of a run's AckTimeline.
const timelineStep = 100 * time.Millisecond

// maxTimelineSteps bounds a run's timeline (10 minutes of steps).
const maxTimelineSteps = 6000

// run samples every second until stop is closed.
func (s *sampler) run(stop <-chan struct{}) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	fine := time.NewTicker(timelineStep)
	defer fine.Stop()
	lastTick, lastRecords, lastBytes := s.start, int64(0), int64(0)
	lastStep := int64(0)
	for {
		select {
		case <-stop:
			return
		case now := <-fine.C:
			// The step is read off the clock, not counted from the ticks: a
			// late tick (a busy machine) leaves its steps at 0 and puts the
			// acks since the last tick in the step it fires in.
			steps := min(int(now.Sub(s.start)/timelineStep), maxTimelineSteps)
			if steps < 1 {
				continue
			}
			for len(s.timeline) < steps {
				s.timeline = append(s.timeline, 0)
			}
			acked := s.metrics.ackedAll.Load()
			s.timeline[steps-1] += acked - lastStep
			lastStep = acked
		case now := <-ticker.C:
			records, bytes := s.metrics.ackedAll.Load(), s.metrics.ackedAllBytes.Load()
			seconds := now.Sub(lastTick).Seconds()
			sample := report.Sample{
				ElapsedSeconds:     now.Sub(s.start).Seconds(),
				RecordsPerSecond:   float64(records-lastRecords) / seconds,
				MegabytesPerSecond: float64(bytes-lastBytes) / seconds / 1e6,
				P99Milliseconds:    s.metrics.takeWindowP99(),
			}
			s.series = append(s.series, sample)
			lastTick, lastRecords, lastBytes = now, records, bytes
			s.tracker.sampled(sample)
		}
	}
}
