package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/broker/txn"
)

// Follower fetching: one replicaFetcher goroutine per source leader broker
// fetches every partition this broker follows from it, with a franz-go
// client pointed at that broker (kgo, one request at a time, no retries:
// the loop retries). A partition added to a fetcher (a new follower role,
// or a new leader epoch) first truncates its divergent tail (truncate,
// KIP-101 / KIP-279); then Fetch requests carry ReplicaID = this broker
// and the current leader epoch, and the leader's batches are appended as
// they are ([partition.Partition.AppendReplicated]). A response for an epoch
// that is no longer the partition's is dropped: the role check runs under
// appendMu, so a stale fetch never lands after a role change.

// Replica fetch parameters (Kafka's replica.fetch.* defaults, with a
// shorter wait so followers report their position promptly).
const (
	replicaFetchMaxWait        = 200 * time.Millisecond
	replicaFetchMaxBytes       = 10 << 20
	replicaFetchPartitionBytes = 1 << 20
	replicaFetchBackoff        = 50 * time.Millisecond
	// truncationRounds bounds the OffsetForLeaderEpoch loop of KIP-279:
	// each round moves to a strictly older epoch.
	truncationRounds = 64
)

// fetcherManager owns the fetchers (one per leader id).
type fetcherManager struct {
	b        *Broker
	mu       sync.Mutex // guards fetchers and closed; a leaf
	fetchers map[int32]*replicaFetcher
	closed   bool
	wg       sync.WaitGroup
}

func newFetcherManager(b *Broker) *fetcherManager {
	return &fetcherManager{b: b, fetchers: map[int32]*replicaFetcher{}}
}

// add makes the fetcher of leader fetch p at leader epoch epoch, starting
// with truncation.
func (m *fetcherManager) add(p *topicPartition, leader, epoch int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	f := m.fetchers[leader]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &replicaFetcher{b: m.b, leader: leader, ctx: ctx, cancel: cancel,
			partitions: map[*topicPartition]*fetchState{}, changed: make(chan struct{}, 1)}
		m.fetchers[leader] = f
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			f.run()
		}()
	}
	f.set(p, &fetchState{epoch: epoch})
}

// remove stops fetching p from any leader.
func (m *fetcherManager) remove(p *topicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.fetchers {
		f.set(p, nil)
	}
}

// close stops every fetcher and waits for them.
func (m *fetcherManager) close() {
	m.mu.Lock()
	m.closed = true
	for _, f := range m.fetchers {
		f.cancel()
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// fetchState is one followed partition's progress in its fetcher.
type fetchState struct {
	epoch     int32
	truncated bool // the divergent tail, if any, is gone; fetching may start
}

// replicaFetcher fetches from one leader broker.
type replicaFetcher struct {
	b      *Broker
	leader int32
	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex // guards partitions; a leaf
	partitions map[*topicPartition]*fetchState
	changed    chan struct{}

	// client and address are the fetcher goroutine's own.
	client  *kgo.Client
	address string
}

// set replaces (nil: removes) the state of p.
func (f *replicaFetcher) set(p *topicPartition, state *fetchState) {
	f.mu.Lock()
	if state == nil {
		delete(f.partitions, p)
	} else {
		f.partitions[p] = state
	}
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// snapshot copies the partitions and their states, forgetting those
// closed (deleted, or the broker is closing).
func (f *replicaFetcher) snapshot() map[*topicPartition]fetchState {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[*topicPartition]fetchState, len(f.partitions))
	for p, state := range f.partitions {
		if p.Closed() {
			delete(f.partitions, p)
			continue
		}
		out[p] = *state
	}
	return out
}

// markTruncated records that p finished truncation at epoch (unless its
// state was replaced meanwhile).
func (f *replicaFetcher) markTruncated(p *topicPartition, epoch int32, truncated bool) {
	f.mu.Lock()
	if state := f.partitions[p]; state != nil && state.epoch == epoch {
		state.truncated = truncated
	}
	f.mu.Unlock()
}

func (f *replicaFetcher) run() {
	defer func() {
		if f.client != nil {
			f.client.Close()
		}
	}()
	for f.ctx.Err() == nil {
		work := f.snapshot()
		if len(work) == 0 {
			f.pause(0)
			continue
		}
		broker, err := f.connect()
		if err != nil {
			f.b.logger.Debug("replica fetcher cannot reach leader", "leader", f.leader, "error", err)
			f.pause(replicaFetchBackoff)
			continue
		}
		ready := map[*topicPartition]fetchState{}
		for p, state := range work {
			if !state.truncated {
				if err := f.truncate(broker, p, state.epoch); err != nil {
					f.b.logger.Debug("replica truncation failed", "partition", p.Name(), "leader", f.leader, "error", err)
					continue
				}
				f.markTruncated(p, state.epoch, true)
			}
			ready[p] = state
		}
		// A reassignment's copy waits while the copy throttle is in
		// debt; the other partitions fetch on.
		throttled := map[*topicPartition]bool{}
		if throttle := f.b.replication.copyThrottle; throttle != nil {
			wait := throttle.wait()
			for p := range ready {
				if f.b.throttledCopy(p) {
					throttled[p] = true
					if wait > 0 {
						delete(ready, p)
					}
				}
			}
			if len(ready) == 0 && wait > 0 {
				f.pause(min(wait, time.Second))
				continue
			}
		}
		if len(ready) == 0 || !f.fetch(broker, ready, throttled) {
			f.pause(replicaFetchBackoff)
		}
	}
}

// pause waits for a change of partitions, the backoff (0: no timeout) or
// the fetcher's end.
func (f *replicaFetcher) pause(backoff time.Duration) {
	var timeout <-chan time.Time
	if backoff > 0 {
		timer := time.NewTimer(backoff)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-f.ctx.Done():
	case <-f.changed:
	case <-timeout:
	}
}

// connect returns the kgo broker handle of the leader, (re)creating the
// client when its address changed.
func (f *replicaFetcher) connect() (*kgo.Broker, error) {
	address, err := f.b.replication.brokerAddress(f.leader)
	if err != nil {
		return nil, err
	}
	if f.client == nil || address != f.address {
		if f.client != nil {
			f.client.Close()
		}
		client, err := kgo.NewClient(append(f.b.replication.peerOptions(), kgo.SeedBrokers(address),
			kgo.ClientID(fmt.Sprintf("replica-fetcher-%d", f.b.nodeID)),
			kgo.DialTimeout(2*time.Second), kgo.RequestTimeoutOverhead(5*time.Second))...)
		if err != nil {
			return nil, fmt.Errorf("client of broker %d at %s: %w", f.leader, address, err)
		}
		f.client, f.address = client, address
	}
	seeds := f.client.SeedBrokers()
	if len(seeds) == 0 {
		return nil, fmt.Errorf("client of broker %d has no seed", f.leader)
	}
	return seeds[0], nil
}

// fetch sends one Fetch for the ready partitions and applies the answer.
// It reports whether any partition was served without error (if none
// was, the loop backs off rather than spin on immediate error answers).
func (f *replicaFetcher) fetch(broker *kgo.Broker, ready map[*topicPartition]fetchState, throttled map[*topicPartition]bool) bool {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = f.b.nodeID
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.b.nodeID, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(replicaFetchMaxWait/time.Millisecond), 1, replicaFetchMaxBytes
	req.SessionEpoch = -1
	byKey := map[txn.TopicPartition]*topicPartition{}
	topicIndex := map[string]int{}
	for p, state := range ready {
		i, ok := topicIndex[p.topic.name]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.topic.name, p.topic.id
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			topicIndex[p.topic.name] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = p.Index(), state.epoch
		rp.FetchOffset, rp.LogStartOffset = p.Log().LogEndOffset(), p.Log().LogStartOffset()
		rp.LastFetchedEpoch, rp.PartitionMaxBytes = -1, replicaFetchPartitionBytes
		if throttled[p] {
			// A quarter second's worth at a time, so one answer does not
			// overshoot the rate by much.
			rp.PartitionMaxBytes = int32(min(replicaFetchPartitionBytes, max(4<<10, f.b.replication.copyThrottle.rate/4)))
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		byKey[txn.TopicPartition{Topic: p.topic.name, Partition: p.Index()}] = p
	}
	raw, err := broker.Request(f.ctx, req)
	if err != nil {
		f.b.logger.Debug("replica fetch failed", "leader", f.leader, "error", err)
		return false
	}
	resp := raw.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		f.b.logger.Debug("replica fetch refused", "leader", f.leader, "error", err)
		return false
	}
	progressed := false
	for _, rt := range resp.Topics {
		name := rt.Topic
		if t := f.b.topicByID(rt.TopicID); t != nil && name == "" {
			name = t.name
		}
		for _, rp := range rt.Partitions {
			p := byKey[txn.TopicPartition{Topic: name, Partition: rp.Partition}]
			if p == nil {
				continue
			}
			if throttled[p] {
				f.b.replication.copyThrottle.spend(len(rp.RecordBatches))
			}
			if f.applyFetched(p, ready[p].epoch, &rp) {
				progressed = true
			}
		}
	}
	return progressed
}

// applyFetched applies one partition of a fetch response; it reports
// whether the partition had no error.
func (f *replicaFetcher) applyFetched(p *topicPartition, epoch int32, rp *kmsg.FetchResponseTopicPartition) bool {
	err := kerr.ErrorForCode(rp.ErrorCode)
	switch {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		if rp.LogStartOffset > p.Log().LogEndOffset() {
			// Our log ends below the leader's log start (a new replica
			// of a partition whose oldest records are gone): start over
			// there.
			if err := p.RestartAsFollower(rp.LogStartOffset, epoch); err != nil {
				f.b.logger.Warn("replica restart at the leader's log start", "partition", p.Name(), "leader_log_start", rp.LogStartOffset, "error", err)
			}
			return false
		}
		f.markTruncated(p, epoch, false) // diverged again: truncate anew
		return false
	default:
		// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH: a role change is on
		// its way; UNKNOWN_LEADER_EPOCH: the leader has not applied it yet.
		f.b.logger.Debug("replica fetch partition error", "partition", p.Name(), "leader", f.leader, "error", err)
		return false
	}
	if len(rp.RecordBatches) >= 8 {
		// An empty log restarted at the leader's log start may be
		// answered with the batch that holds that offset, which starts
		// below it: start the log at that batch instead (Kafka does the
		// same on UnexpectedAppendOffsetException).
		base := int64(binary.BigEndian.Uint64(rp.RecordBatches))
		if log := p.Log(); base < log.LogEndOffset() && log.LogStartOffset() == log.LogEndOffset() {
			if err := p.RestartAsFollower(base, epoch); err != nil {
				f.b.logger.Warn("replica restart at the leader's first batch", "partition", p.Name(), "base_offset", base, "error", err)
				return false
			}
		}
	}
	if len(rp.RecordBatches) > 0 {
		if err := p.AppendReplicated(rp.RecordBatches, epoch); err != nil {
			if errors.Is(err, partition.ErrDiverged) {
				f.markTruncated(p, epoch, false)
			}
			f.b.logger.Debug("replica append", "partition", p.Name(), "error", err)
			return false
		}
	}
	p.LearnHighWatermark(rp.HighWatermark, epoch)
	// DeleteRecords on the leader: follow its log start offset.
	if err := p.LearnLogStartOffset(rp.LogStartOffset); err != nil {
		f.b.logger.Warn("replica log start offset", "partition", p.Name(), "leader_log_start", rp.LogStartOffset, "error", err)
	}
	return true
}

// truncate runs the KIP-279 loop against the leader and cuts the local log
// where it diverges from the leader's.
func (f *replicaFetcher) truncate(broker *kgo.Broker, p *topicPartition, epoch int32) error {
	requested, logEnd, start := p.LatestEpochAndEnds()
	if logEnd == start {
		return nil // nothing to diverge
	}
	target := logEnd
	if requested < 0 {
		target = min(p.HighWatermark(), logEnd) // no epochs known: keep what was committed (KIP-101's fallback)
	}
	for round := 0; requested >= 0; round++ {
		if round == truncationRounds {
			return fmt.Errorf("%s: no common leader epoch after %d rounds", p.Name(), round)
		}
		leaderEpoch, leaderEnd, err := f.offsetForLeaderEpoch(broker, p, requested, epoch)
		if err != nil {
			return err
		}
		if leaderEnd < 0 {
			target = min(p.HighWatermark(), logEnd)
			break
		}
		followerEpoch, followerEnd := p.EndOffsetForEpoch(leaderEpoch)
		if followerEpoch >= 0 && followerEpoch != leaderEpoch {
			requested = followerEpoch // the leader's epoch is unknown here: ask about our next older one
			continue
		}
		target = min(leaderEnd, logEnd)
		if followerEpoch >= 0 {
			target = min(target, followerEnd)
		}
		break
	}
	return p.TruncateAsFollower(target, epoch)
}

// offsetForLeaderEpoch asks the leader where epoch requested ends.
func (f *replicaFetcher) offsetForLeaderEpoch(broker *kgo.Broker, p *topicPartition, requested, current int32) (int32, int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = f.b.nodeID
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = p.topic.name
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.Index(), current, requested
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw, err := broker.Request(f.ctx, req)
	if err != nil {
		return 0, 0, fmt.Errorf("OffsetForLeaderEpoch of %s: %w", p.Name(), err)
	}
	resp := raw.(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, 0, fmt.Errorf("OffsetForLeaderEpoch of %s: malformed answer", p.Name())
	}
	answer := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(answer.ErrorCode); err != nil {
		return 0, 0, fmt.Errorf("OffsetForLeaderEpoch of %s: %w", p.Name(), err)
	}
	return answer.LeaderEpoch, answer.EndOffset, nil
}
