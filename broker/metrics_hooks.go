package broker

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/wire"
)

// This file connects the broker to broker/metrics (Config.Metrics). Every
// hook is behind a nil check of b.metrics, so a broker without metrics
// pays only that check; with metrics, the request path uses per-API and
// per-topic handles resolved once (no label lookup per request).
//
// The request time split (requestTiming, the response slot's timing): read is
// when the request's frame was read, start when its handler began
// (queue = start - read: the header parse and the wait for a slot in the
// connection's in-flight queue), encode when its response began to be
// encoded (local = encode - start - durability), written when the writer
// finished sending it (send = written - encode: waiting behind earlier
// responses of the connection, then the write). durability is the acks=all
// Produce wait for fsync and the ISR (connection.awaitDurable).

// Ready reports whether the broker is ready to serve (/readyz): Start has
// returned, so the partition logs are recovered; Close has not begun; as
// a member of a quorum, it has applied the metadata (caught up with its
// registration, member.waitCaughtUp); and every group and transaction
// coordinator shard of a partition led here is loaded (until then their
// clients are told COORDINATOR_LOAD_IN_PROGRESS).
func (b *Broker) Ready() bool {
	if !b.ready.Load() || b.ctx.Err() != nil {
		return false
	}
	if m := b.member; m != nil && !m.hasApplied() {
		return false
	}
	if r := b.replication; r != nil && (r.groups.loading() > 0 || r.txns.loading() > 0) {
		return false
	}
	return true
}

// requestHistograms validates metrics.request.histograms (for
// brokerSettings).
func requestHistograms(v string) error {
	_, err := metrics.ParseRequestHistograms(v)
	return err
}

// requestHistograms reads metrics.request.histograms (for parseSettings).
func (p *settingsParser) requestHistograms(name string) metrics.RequestHistograms {
	v, ok := p.value(name, kindString)
	if !ok {
		return metrics.RequestHistogramsDefault
	}
	h, err := metrics.ParseRequestHistograms(v)
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("broker setting %s: %w", name, err))
	}
	return h
}

// configureMetrics applies the metrics settings; Start calls it before
// any listener accepts.
func (b *Broker) configureMetrics() {
	if b.metrics != nil {
		b.metrics.SetRequestHistograms(b.config.settings.RequestHistograms)
	}
}

// onSync is the storage.Options.OnSync hook: nil without metrics.
func (b *Broker) onSync() func(time.Duration) {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.Fsync
}

// startMetrics installs the scrape-time sources; Start calls it once the
// logs and coordinators are open.
func (b *Broker) startMetrics() {
	if b.metrics == nil {
		return
	}
	b.metrics.SetSources(metrics.Sources{
		Partitions:       b.partitionStates,
		Groups:           b.groupStates,
		OpenTransactions: b.openTransactionCount,
		Replication:      b.replicationState,
	})
}

// isrChanged counts an ISR change of a partition led here (metrics).
func (b *Broker) isrChanged(before, after []int32) {
	if b.metrics != nil {
		b.metrics.ISRChanged(before, after)
	}
}

// replicationState reads the replication figures for a scrape: from each
// local partition's role (an atomic) and the topic's min.insync.replicas,
// and, on the active controller, the partitions without a leader in the
// cluster view this broker last applied.
func (b *Broker) replicationState() metrics.ReplicationState {
	var state metrics.ReplicationState
	for _, p := range b.allPartitions() {
		if p.Closed() {
			continue
		}
		state.Partitions++
		role := p.Role()
		if role == nil || role.Leader != b.nodeID {
			continue
		}
		state.Leaders++
		if len(role.ISR) < len(role.Replicas) {
			state.UnderReplicated++
		}
		if int64(len(role.ISR)) < p.topic.config.Load().minInsyncReplica {
			state.UnderMinISR++
		}
	}
	node := b.QuorumNode()
	if node != nil {
		state.QuorumLastLog, state.QuorumCommitted, state.QuorumApplied = node.LogIndexes()
	}
	if node != nil && node.IsController() {
		state.ActiveController = true
		if view := b.replication.view.Load(); view != nil {
			for _, roles := range view.topics {
				for _, role := range roles {
					if role.Leader < 0 {
						state.Offline++
					}
				}
			}
		}
	}
	return state
}

// partitionStates reads every partition's log figures for a scrape.
//
// Safe without the partitions' append locks: allPartitions takes
// topicsMu (read) for the partition lists only; LogEndOffset, Size and
// SegmentCount take the log's own mu (read), which storage holds only to
// publish memory, never across I/O, so a scrape never waits on the disk
// or on an append; the high watermark and last stable offset are atomics
// written under appendMu and read lock-free by fetches too. The figures
// of one partition may come from instants a few appends apart — a scrape
// is a sample, not a snapshot. A partition closed meanwhile is skipped.
func (b *Broker) partitionStates() []metrics.PartitionState {
	partitions := b.allPartitions()
	states := make([]metrics.PartitionState, 0, len(partitions))
	for _, p := range partitions {
		if p.Closed() {
			continue
		}
		lag := p.HighWatermark() - p.LastStableOffset()
		if lag < 0 {
			lag = 0 // the two atomics were read at different instants
		}
		states = append(states, metrics.PartitionState{
			Topic: p.topic.name, Partition: p.Index(),
			LogEndOffset: p.Log().LogEndOffset(), Segments: p.Log().SegmentCount(), SizeBytes: p.Log().Size(),
			LSOLagRecords: lag,
		})
	}
	return states
}

// groupStates counts the members of every group coordinated here: by
// the loaded coordinator shards of the __consumer_offsets partitions led
// here. Each coordinator takes its own locks (group.mu, briefly, per
// group); none is held across I/O.
func (b *Broker) groupStates() []metrics.GroupState {
	var states []metrics.GroupState
	for _, coordinator := range b.replication.groups.loaded() {
		listed, err := coordinator.ListGroups(group.ListFilter{})
		if err != nil {
			continue // closed meanwhile
		}
		for _, g := range listed {
			described, err := coordinator.DescribeGroup(g.Group)
			if err != nil {
				continue
			}
			states = append(states, metrics.GroupState{Group: g.Group, Members: len(described.Members), Lags: b.groupLags(coordinator, g.Group)})
		}
	}
	return states
}

// groupLags is each committed partition's high watermark minus the
// group's committed offset, for the partitions with a replica here (a
// follower's high watermark is the leader's as last learned); others are
// left out.
func (b *Broker) groupLags(coordinator *group.Coordinator, groupID string) []metrics.PartitionLag {
	topics, err := coordinator.FetchOffsets(group.FetchRequest{Group: groupID, MemberEpoch: -1})
	if err != nil {
		return nil
	}
	var lags []metrics.PartitionLag
	for _, topic := range topics {
		t := b.topicByName(topic.Name)
		if t == nil {
			continue
		}
		partitions := b.partitionsOf(t)
		for _, committed := range topic.Partitions {
			if committed.Offset < 0 || int(committed.Partition) >= len(partitions) || partitions[committed.Partition] == nil {
				continue
			}
			lag := partitions[committed.Partition].HighWatermark() - committed.Offset
			lags = append(lags, metrics.PartitionLag{Topic: topic.Name, Partition: committed.Partition, Records: max(0, lag)})
		}
	}
	return lags
}

// openTransactionCount counts the open transactions of the loaded
// __transaction_state shards.
func (b *Broker) openTransactionCount() int {
	open := 0
	for _, coordinator := range b.replication.txns.loaded() {
		open += coordinator.OpenTransactions()
	}
	return open
}

// apiMetrics is the request metrics of an API key, or nil without metrics.
func (b *Broker) apiMetrics(key int16) *metrics.API {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.API(key, wire.APIName(key))
}

// topicMetrics is t's data metrics (b.metrics is not nil), resolved once
// per topic and kept on it.
func (b *Broker) topicMetrics(t *topic) *metrics.Topic {
	if m := t.metrics.Load(); m != nil {
		return m
	}
	m := b.metrics.Topic(t.name)
	t.metrics.Store(m)
	return m
}

// countErrorCode counts one response error code of api (0 is not an error).
func countErrorCode(api *metrics.API, code int16) {
	if code == 0 {
		return
	}
	name := "UNKNOWN_" + itoa16(code)
	if e := kerr.ErrorForCode(code); e != nil {
		if ke, ok := e.(*kerr.Error); ok {
			name = ke.Message
		}
	}
	api.Error(name)
}

func itoa16(v int16) string { return strconv.Itoa(int(v)) }

// countResponseErrors counts every non-zero ErrorCode field of a kmsg
// response (at any depth: response, topic, partition, member...). This is
// the one place response error codes are counted for the kmsg-encoded
// responses (kmsgAdapter, Produce); the zero-copy Fetch counts its
// partitions' codes where it encodes them (countFetched, from
// connection.serveFetch).
func countResponseErrors(api *metrics.API, resp any) {
	v := reflect.ValueOf(resp)
	walkErrorCodes(api, v)
}

// errorCodePaths caches, per struct type, whether it or anything below
// it has an ErrorCode field (the walk skips the rest).
var errorCodePaths sync.Map // reflect.Type → bool

func hasErrorCodes(t reflect.Type) bool {
	if cached, ok := errorCodePaths.Load(t); ok {
		return cached.(bool)
	}
	errorCodePaths.Store(t, false) // breaks recursion through self-referencing types
	found := false
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		found = hasErrorCodes(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField() && !found; i++ {
			f := t.Field(i)
			if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
				found = true
			} else if f.IsExported() {
				found = hasErrorCodes(f.Type)
			}
		}
	}
	errorCodePaths.Store(t, found)
	return found
}

func walkErrorCodes(api *metrics.API, v reflect.Value) {
	if !v.IsValid() || !hasErrorCodes(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkErrorCodes(api, v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkErrorCodes(api, v.Index(i))
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
				countErrorCode(api, int16(v.Field(i).Int()))
				continue
			}
			walkErrorCodes(api, v.Field(i))
		}
	}
}

// countProduced counts one Produce partition's append (metrics on):
// bytes, batches and records appended, or a duplicate, or an out-of-order
// refusal.
func (b *Broker) countProduced(t *topic, info *partition.AppendInfo, result partition.Outcome, err error) {
	switch {
	case errors.Is(err, producers.ErrOutOfOrderSequence):
		b.metrics.OutOfOrderSequence()
	case err != nil:
	case result.Duplicate:
		b.metrics.IdempotentDuplicate()
	default:
		m := b.topicMetrics(t)
		m.BytesIn.Add(float64(info.Bytes()))
		m.Batches.Add(float64(info.BatchCount()))
		m.Records.Add(float64(info.RecordCount()))
	}
}

// countFetched counts a Fetch response's partition error codes and, for
// client (not follower) fetches, the record bytes sent per topic.
func (b *Broker) countFetched(api *metrics.API, targets []fetchTarget, reads []partitionRead) {
	for i := range reads {
		read := &reads[i]
		if read.err != nil {
			countErrorCode(api, errorCode(read.err))
			continue
		}
		if target := &targets[i]; !target.replica && target.partition != nil && read.size > 0 {
			b.topicMetrics(target.partition.topic).BytesOut.Add(float64(read.size))
		}
	}
}
