// Package pollwatch follows what a consumer client's polls return, for
// the checker's poll judgement (verify.PollTracker): a kgo hook (Option)
// that feeds a verify.PollSink with the client's assignment changes, each
// poll's records and the positions the consumer moves itself. The load
// generator installs it in its consume stages, live consumers and
// read-backs; a worker subprocess's sink reports to the runner instead.
package pollwatch

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Watch links one consumer client to its poll tracker. It is a kgo hook,
// so it travels inside the client's options and everything holding the
// client finds it (Of): kgo binds it when the client is made
// (OnNewClient: the client's topic and id name its tracker) and marks the
// start of each poll (OnPollStart); the group's assignment callbacks report
// assignment changes (Assignment); the poll loop reports each poll's
// records (Fetched) and the positions it moves itself (Rewound, Ended).
// All methods are nil-safe: a client without a watch reports nothing.
//
// bound is set once, in OnNewClient, and read by kgo's callback goroutines
// (atomic); the polling goroutine owns mark (OnPollStart and Fetched run
// on it).
type Watch struct {
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
	_ kgo.HookNewClient = (*Watch)(nil)
	_ kgo.HookPollStart = (*Watch)(nil)
)

// OnNewClient binds the watch to the client's (first) consumed topic.
func (w *Watch) OnNewClient(client *kgo.Client) {
	topic := consumedTopic(client)
	w.bound.Store(&boundWatch{topic: topic, gate: verify.NewPollGate(w.bind(client, topic))})
}

// OnPollStart marks the start of a poll.
func (w *Watch) OnPollStart(context.Context) {
	if bound := w.bound.Load(); bound != nil {
		w.mark = bound.gate.Mark()
	}
}

// Of returns the watch in client's hooks, or nil.
func Of(client *kgo.Client) *Watch {
	if client == nil {
		return nil
	}
	hooks, _ := client.OptValue(kgo.WithHooks).([]kgo.Hook)
	for _, hook := range hooks {
		if watch, ok := hook.(*Watch); ok && watch.bound.Load() != nil {
			return watch
		}
	}
	return nil
}

// Option is the client option installing a watch whose sink bind
// makes; nil bind gives an option that installs nothing.
func Option(bind func(client *kgo.Client, topic string) verify.PollSink) kgo.Opt {
	if bind == nil {
		return kgo.WithHooks()
	}
	return kgo.WithHooks(&Watch{bind: bind})
}

// Assignment reports an assignment change of the watched topic.
func (w *Watch) Assignment(partitions map[string][]int32, assigned bool) {
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

// Fetched reports a poll's records of the watched topic: call it on the
// polling goroutine right after the poll returns.
func (w *Watch) Fetched(fetches kgo.Fetches) {
	if w == nil {
		return
	}
	bound := w.bound.Load()
	fetches.EachPartition(func(partition kgo.FetchTopicPartition) {
		if partition.Topic != bound.topic || len(partition.Records) == 0 {
			return
		}
		bound.gate.Polled(w.mark, partition.Partition, PolledRecords(partition.Records))
	})
}

// Rewound reports that the consumer moved its own position on partitions
// (nil: every partition) between polls: a seek, or a transactional
// session resetting to its committed offsets after an abort.
func (w *Watch) Rewound(partitions []int32) {
	if w != nil {
		w.bound.Load().gate.Rewound(partitions)
	}
}

// Ended reports a GroupTransactSession's End: a transaction that did not
// commit resets every partition to the committed offsets.
func (w *Watch) Ended(committed bool) {
	if !committed {
		w.Rewound(nil)
	}
}

// PolledRecords is what a tracker needs of records: offsets and ids (0
// for a control record).
func PolledRecords(records []*kgo.Record) []verify.PolledRecord {
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

// ClientIsolation is client's fetch isolation level.
func ClientIsolation(client *kgo.Client) verify.Isolation {
	if level, _ := client.OptValue(kgo.FetchIsolationLevel).(int8); level == 1 {
		return verify.ReadCommitted
	}
	return verify.ReadUncommitted
}
