package loadgen

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

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

// pollWatch links one consumer client to its poll tracker. It is a kgo
// hook, so it travels inside the client's options and everything holding
// the client finds it (pollWatchOf): kgo binds it when the client is made
// (OnNewClient: the client's topic and id name its tracker) and marks the
// start of each poll (OnPollStart); assignmentOptions' callbacks report
// assignment changes; the poll loop reports each poll's records (fetched)
// and the positions it moves itself (rewound). All methods are nil-safe:
// a client without a watch reports nothing.
//
// bound is set once, in OnNewClient, and read by kgo's callback goroutines
// (atomic); the polling goroutine owns mark (OnPollStart and fetched run
// on it).
type pollWatch struct {
	// bind makes the sink once the client exists.
	bind  func(client *kgo.Client, topic string) verify.PollSink
	bound atomic.Pointer[boundWatch]
	mark  verify.PollMark
}

// boundWatch is a watch bound to its client: the topic it watches and the
// gate that orders the client's callbacks and polls into the sink.
type boundWatch struct {
	topic string
	gate  *verify.PollGate
}

var (
	_ kgo.HookNewClient = (*pollWatch)(nil)
	_ kgo.HookPollStart = (*pollWatch)(nil)
)

// OnNewClient binds the watch to the client's (first) consumed topic.
func (w *pollWatch) OnNewClient(client *kgo.Client) {
	topic := consumedTopic(client)
	w.bound.Store(&boundWatch{topic: topic, gate: verify.NewPollGate(w.bind(client, topic))})
}

// OnPollStart marks the start of a poll.
func (w *pollWatch) OnPollStart(context.Context) {
	if bound := w.bound.Load(); bound != nil {
		w.mark = bound.gate.Mark()
	}
}

// pollWatchOf returns the watch in client's hooks, or nil.
func pollWatchOf(client *kgo.Client) *pollWatch {
	if client == nil {
		return nil
	}
	hooks, _ := client.OptValue(kgo.WithHooks).([]kgo.Hook)
	for _, hook := range hooks {
		if watch, ok := hook.(*pollWatch); ok && watch.bound.Load() != nil {
			return watch
		}
	}
	return nil
}

// watchOption is the client option installing a watch whose sink bind
// makes; nil bind gives an option that installs nothing.
func watchOption(bind func(client *kgo.Client, topic string) verify.PollSink) kgo.Opt {
	if bind == nil {
		return kgo.WithHooks()
	}
	return kgo.WithHooks(&pollWatch{bind: bind})
}

// watch returns the option that tracks an in-process consumer of kind:
// its tracker joins the group of kind on the topic it consumes, named by
// its client id. A nil runObservations tracks nothing.
func (r *runObservations) watch(kind string) kgo.Opt {
	if r == nil {
		return watchOption(nil)
	}
	return watchOption(func(client *kgo.Client, topic string) verify.PollSink {
		id, _ := client.OptValue(kgo.ClientID).(string)
		return r.group(kind, topic, clientIsolation(client)).tracker(id)
	})
}

// assignment reports an assignment change of the watched topic.
func (w *pollWatch) assignment(partitions map[string][]int32, assigned bool) {
	if w == nil {
		return
	}
	bound := w.bound.Load()
	if len(partitions[bound.topic]) == 0 {
		return
	}
	if assigned {
		bound.gate.Assigned(partitions[bound.topic])
	} else {
		bound.gate.Revoked(partitions[bound.topic])
	}
}

// fetched reports a poll's records of the watched topic: call it on the
// polling goroutine right after the poll returns.
func (w *pollWatch) fetched(fetches kgo.Fetches) {
	if w == nil {
		return
	}
	bound := w.bound.Load()
	fetches.EachPartition(func(partition kgo.FetchTopicPartition) {
		if partition.Topic != bound.topic || len(partition.Records) == 0 {
			return
		}
		bound.gate.Polled(w.mark, partition.Partition, polledRecords(partition.Records))
	})
}

// rewound reports that the consumer moved its own position on partitions
// (nil: every partition) between polls: a seek, or a transactional
// session resetting to its committed offsets after an abort.
func (w *pollWatch) rewound(partitions []int32) {
	if w != nil {
		w.bound.Load().gate.Rewound(partitions)
	}
}

// ended reports a GroupTransactSession's End: a transaction that did not
// commit resets every partition to the committed offsets.
func (w *pollWatch) ended(committed bool) {
	if !committed {
		w.rewound(nil)
	}
}

// polledRecords is what a tracker needs of records: offsets and ids (0
// for a control record).
func polledRecords(records []*kgo.Record) []verify.PolledRecord {
	polled := make([]verify.PolledRecord, len(records))
	for index, record := range records {
		polled[index].Offset = record.Offset
		if !record.Attrs.IsControl() {
			polled[index].Record = verify.IdentifyValue(record.Value)
		}
	}
	return polled
}

// consumedTopic is the first topic client consumes (by group or by
// partition).
func consumedTopic(client *kgo.Client) string {
	if topics, _ := client.OptValue(kgo.ConsumeTopics).([]string); len(topics) > 0 {
		return topics[0]
	}
	partitions, _ := client.OptValue(kgo.ConsumePartitions).(map[string]map[int32]kgo.Offset)
	if topics := slices.Sorted(maps.Keys(partitions)); len(topics) > 0 {
		return topics[0]
	}
	return ""
}

// clientIsolation is client's fetch isolation level.
func clientIsolation(client *kgo.Client) verify.Isolation {
	if level, _ := client.OptValue(kgo.FetchIsolationLevel).(int8); level == 1 {
		return verify.ReadCommitted
	}
	return verify.ReadUncommitted
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
