package loadgen

import (
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/pollwatch"
	"github.com/exactly-eos/exactly/loadgen/verify"
	"github.com/exactly-eos/exactly/loadgen/worker"
)

// Consumer kinds: the consumers of one kind polling one topic are judged
// together (one check each in the results, see verifyPolls) and share one
// reader name in the topic's verify.OffsetObservations.
const (
	consumersPipeline = "pipeline workers"
	consumersDatabase = "database workers"
	consumersRelay    = "relay workers"
	consumersLive     = "live consumers"
)

// runObservations is what every reader of one run found at each offset of
// each topic, and the poll trackers of the run's consumers. It is made per
// run (runPlan.observations) before the load starts; consumers feed it
// while the run goes on, the read-backs after, and verifyRun judges it.
// mu guards topics and groups; the observations, groups and trackers lock
// themselves. Lock order: runObservations.mu, pollGroup.mu, a PollGate's
// mu, lockedTracker.mu, OffsetObservations' mu.
type runObservations struct {
	mu     sync.Mutex
	topics map[string]*verify.OffsetObservations
	groups []*pollGroup
}

func newRunObservations() *runObservations {
	return &runObservations{topics: make(map[string]*verify.OffsetObservations)}
}

// topic returns the observations of topic.
func (r *runObservations) topic(name string) *verify.OffsetObservations {
	r.mu.Lock()
	defer r.mu.Unlock()
	observations := r.topics[name]
	if observations == nil {
		observations = verify.NewOffsetObservations(name)
		r.topics[name] = observations
	}
	return observations
}

// group returns the consumers of kind polling topic.
func (r *runObservations) group(kind, topic string, isolation verify.Isolation) *pollGroup {
	observations := r.topic(topic)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, group := range r.groups {
		if group.kind == kind && group.topic == topic {
			return group
		}
	}
	group := &pollGroup{kind: kind, topic: topic, isolation: isolation, observations: observations,
		observer: observations.Observer(kind)}
	r.groups = append(r.groups, group)
	return group
}

// pollGroups returns the groups made so far.
func (r *runObservations) pollGroups() []*pollGroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.groups)
}

// pollGroup is the consumers of one kind polling one topic: one tracker
// per client (a worker subprocess, or an in-process client, over its
// life). mu guards trackers.
type pollGroup struct {
	kind, topic  string
	isolation    verify.Isolation
	observations *verify.OffsetObservations
	observer     verify.Observer
	mu           sync.Mutex
	trackers     []*lockedTracker
}

// tracker adds the tracker of the consumer called name.
func (g *pollGroup) tracker(name string) *lockedTracker {
	tracker := &lockedTracker{tracker: verify.NewPollTracker(name, g.observations, g.observer)}
	g.mu.Lock()
	g.trackers = append(g.trackers, tracker)
	g.mu.Unlock()
	return tracker
}

// judge judges the group's polls against reference. It locks every
// tracker while it reads them: a straggling consumer may still report.
func (g *pollGroup) judge(reference verify.SkipReference) verify.PollVerdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	trackers := make([]*verify.PollTracker, len(g.trackers))
	for index, tracker := range g.trackers {
		tracker.mu.Lock()
		defer tracker.mu.Unlock()
		trackers[index] = tracker.tracker
	}
	return verify.JudgePolls(trackers, reference)
}

// lockedTracker is a verify.PollTracker behind a mutex: its consumer feeds
// it (through a PollGate in process, from the event reader of a worker
// subprocess) while the verification may read it. mu guards tracker.
type lockedTracker struct {
	mu      sync.Mutex
	tracker *verify.PollTracker
}

func (t *lockedTracker) Assigned(partitions []int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracker.Assigned(partitions)
}

func (t *lockedTracker) Revoked(partitions []int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracker.Revoked(partitions)
}

func (t *lockedTracker) Rewound(partitions []int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracker.Rewound(partitions)
}

func (t *lockedTracker) Polled(partition int32, records []verify.PolledRecord, settled bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracker.Polled(partition, records, settled)
}

// watch returns the option that tracks an in-process consumer of kind:
// its tracker joins the group of kind on the topic it consumes, named by
// its client id. A nil runObservations tracks nothing.
func (r *runObservations) watch(kind string) kgo.Opt {
	if r == nil {
		return pollwatch.Option(nil)
	}
	return pollwatch.Option(func(client *kgo.Client, topic string) verify.PollSink {
		id, _ := client.OptValue(kgo.ClientID).(string)
		return r.group(kind, topic, pollwatch.ClientIsolation(client)).tracker(id)
	})
}

// workerTracker is the tracker of one worker subprocess of spec (a new one
// per process launched), fed by worker.ReplayPoll; the subprocess's
// consumer reads spec.Input read_committed.
func (r *runObservations) workerTracker(spec worker.Spec, name string) verify.PollSink {
	kind := consumersPipeline
	if spec.Role == worker.RoleDBStage {
		kind = consumersDatabase
	}
	if r == nil {
		return discardPolls{}
	}
	return r.group(kind, spec.Input, verify.ReadCommitted).tracker(name)
}

// discardPolls is the sink of a run that tracks no polls.
type discardPolls struct{}

func (discardPolls) Assigned([]int32)                          {}
func (discardPolls) Revoked([]int32)                           {}
func (discardPolls) Rewound([]int32)                           {}
func (discardPolls) Polled(int32, []verify.PolledRecord, bool) {}
