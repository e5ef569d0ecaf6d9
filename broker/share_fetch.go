package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/broker/share"
	"github.com/exactly-eos/exactly/wire"
)

// ShareFetch and ShareAcknowledge on the partition leader. A ShareFetch
// first applies the acknowledgements it carries, then acquires records for
// the member on its session's partitions — records available again
// (released, timed out) before new ones, up to MaxRecords and MaxBytes —
// and, when none could be acquired, waits up to MaxWait for an append or
// a release. The response carries each partition's whole record batches
// that hold an acquired offset, and the acquired ranges with their
// delivery counts; the client hands out only acquired records.

// defaultShareMaxRecords bounds a ShareFetch v0's acquisitions (v1+ sends
// MaxRecords).
const defaultShareMaxRecords = 500

// shareFetchTarget is one session partition resolved for a request.
type shareFetchTarget struct {
	key sharePartitionKey
	tp  *topicPartition
	err error
}

// shareTopicAllowed says whether the principal may read the named topic.
type shareTopicAllowed func(name string) bool

// resolveShare resolves a share-partition key to the partition led here.
func (b *Broker) resolveShare(key sharePartitionKey, allowed shareTopicAllowed) (*topicPartition, error) {
	t := b.topicByID(key.topicID)
	if t == nil {
		return nil, fmt.Errorf("%w: %x", errUnknownTopicID, key.topicID)
	}
	if !allowed(t.name) {
		return nil, fmt.Errorf("%w: %s", errTopicAuthorization, t.name)
	}
	tp, err := b.partitionOf(t, key.partition)
	if err != nil {
		return nil, err
	}
	if err := tp.CheckLeader(-1); err != nil {
		return nil, err
	}
	return tp, nil
}

// shareResponse builds a ShareFetch response's topics and partitions.
type shareResponse struct {
	resp   *kmsg.ShareFetchResponse
	topics map[[16]byte]int
}

func (s *shareResponse) partition(topicID [16]byte, partition int32) *kmsg.ShareFetchResponseTopicPartition {
	i, ok := s.topics[topicID]
	if !ok {
		i = len(s.resp.Topics)
		s.topics[topicID] = i
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = topicID
		s.resp.Topics = append(s.resp.Topics, t)
	}
	t := &s.resp.Topics[i]
	for j := range t.Partitions {
		if t.Partitions[j].Partition == partition {
			return &t.Partitions[j]
		}
	}
	p := kmsg.NewShareFetchResponseTopicPartition()
	p.Partition = partition
	p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
	t.Partitions = append(t.Partitions, p)
	return &t.Partitions[len(t.Partitions)-1]
}

// shareFetch serves one ShareFetch; done is the connection's end.
func (m *shareManager) shareFetch(ctx context.Context, req *kmsg.ShareFetchRequest, allowed shareTopicAllowed, closed <-chan struct{}) *kmsg.ShareFetchResponse {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	out := &shareResponse{resp: resp, topics: map[[16]byte]int{}}
	groupID, memberID := derefString(req.GroupID), derefString(req.MemberID)
	cfg := m.b.shareConfig(groupID)
	resp.AcquisitionLockTimeoutMillis = int32(cfg.LockDuration.Milliseconds())
	fail := func(code int16, message string) *kmsg.ShareFetchResponse {
		resp.ErrorCode, resp.ErrorMessage = code, &message
		return resp
	}
	if code, message := checkShareIDs(groupID, memberID); code != 0 {
		return fail(code, message)
	}
	switch {
	case req.IsRenewAck && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0):
		return fail(kerr.InvalidRequest.Code, "a renew acknowledgement fetches nothing: MaxBytes, MinBytes, MaxRecords and MaxWaitMs must be 0")
	}
	key := shareSessionKey{group: groupID, member: memberID}
	var requested, forgotten []sharePartitionKey
	acks := map[sharePartitionKey][]shareAckBatch{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			pk := sharePartitionKey{group: groupID, topicID: rt.TopicID, partition: rp.Partition}
			requested = append(requested, pk)
			for _, batch := range rp.AcknowledgementBatches {
				acks[pk] = append(acks[pk], shareAckBatch{first: batch.FirstOffset, last: batch.LastOffset, types: batch.AcknowledgeTypes})
			}
		}
	}
	for _, ft := range req.ForgottenTopicsData {
		for _, p := range ft.Partitions {
			forgotten = append(forgotten, sharePartitionKey{group: groupID, topicID: ft.TopicID, partition: p})
		}
	}
	maxType := share.AckReject
	if req.Version >= 2 && req.IsRenewAck {
		maxType = share.AckRenew
	}
	applyAcks := func() {
		for pk, batches := range acks {
			tp, err := m.b.resolveShare(pk, allowed)
			if err == nil {
				err = m.acknowledge(ctx, pk, tp, memberID, batches, maxType)
			}
			if err != nil {
				p := out.partition(pk.topicID, pk.partition)
				p.AcknowledgeErrorCode = shareErrorCode(err)
				message := err.Error()
				p.AcknowledgeErrorMessage = &message
			} else {
				out.partition(pk.topicID, pk.partition)
			}
		}
	}
	var session *shareSession
	switch {
	case req.ShareSessionEpoch == -1:
		closing, err := m.takeSession(key)
		if err != nil {
			return fail(shareSessionCode(err), err.Error())
		}
		applyAcks()
		m.releaseMember(ctx, closing)
		return resp
	case req.ShareSessionEpoch == 0:
		if len(acks) > 0 {
			return fail(kerr.InvalidRequest.Code, "a ShareFetch opening a session (epoch 0) can't carry acknowledgements")
		}
		session = m.openSession(key, requested, closed)
		for _, pk := range requested {
			out.partition(pk.topicID, pk.partition) // a full response names every partition
		}
	case req.ShareSessionEpoch < -1:
		return fail(kerr.InvalidShareSessionEpoch.Code, fmt.Sprintf("share session epoch %d is invalid", req.ShareSessionEpoch))
	default:
		var err error
		if session, err = m.advanceSession(key, req.ShareSessionEpoch, requested, forgotten); err != nil {
			return fail(shareSessionCode(err), err.Error())
		}
		applyAcks()
	}
	if req.IsRenewAck {
		return resp
	}
	m.acquireForSession(ctx, session, req, cfg, allowed, out)
	return resp
}

// acquireForSession acquires records on the session's partitions into the
// response, waiting up to MaxWait while there is nothing to acquire.
func (m *shareManager) acquireForSession(ctx context.Context, session *shareSession, req *kmsg.ShareFetchRequest, cfg share.Config, allowed shareTopicAllowed, out *shareResponse) {
	maxRecords := int(req.MaxRecords)
	if req.Version < 1 || maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	maxBytes := int64(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = 1 << 20
	}
	readCommitted := m.b.groupSettings(session.key.group).ShareReadCommitted
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		// A fetch whose connection ended, or whose session was closed or
		// replaced while it waited, acquires nothing: nobody would read
		// its answer, and its records would stay locked until their locks
		// ran out, counted as a delivery no consumer saw.
		if ctx.Err() != nil || m.b.ctx.Err() != nil || !m.isCurrent(session) {
			return
		}
		var targets []shareFetchTarget
		var wake []<-chan struct{}
		for _, pk := range m.sessionPartitions(session) {
			tp, err := m.b.resolveShare(pk, allowed)
			targets = append(targets, shareFetchTarget{key: pk, tp: tp, err: err})
			if tp != nil {
				wake = append(wake, tp.WaitChannel())
			}
		}
		wake = append(wake, m.releasedChannel())
		got, failed := false, false
		records, bytes := maxRecords, maxBytes
		for _, target := range targets {
			if target.err != nil {
				p := out.partition(target.key.topicID, target.key.partition)
				p.ErrorCode = shareErrorCode(target.err)
				if errors.Is(target.err, errNotLeader) {
					m.b.fillShareLeader(target.key, p)
				}
				failed = true
				continue
			}
			if records <= 0 || bytes <= 0 {
				continue
			}
			data, acquired, err := m.acquire(ctx, target, session, records, bytes, readCommitted)
			if err != nil {
				// The state could not be read or written at the
				// coordinator: nothing was acquired; the next fetch tries
				// again.
				m.b.logger.Debug("share fetch acquired nothing", "partition", target.key.String(), "err", err)
				continue
			}
			if len(acquired) == 0 {
				continue
			}
			got = true
			p := out.partition(target.key.topicID, target.key.partition)
			p.Records = data
			for _, a := range acquired {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
				p.AcquiredRecords = append(p.AcquiredRecords, ar)
				records -= int(a.Last - a.First + 1)
			}
			bytes -= int64(len(data))
		}
		if got || failed || !time.Now().Before(deadline) || ctx.Err() != nil || m.b.ctx.Err() != nil {
			return
		}
		waitForAny(wake, deadline, ctx.Done(), m.b.ctx.Done()) // an append or a release, the deadline, or the end
	}
}

// acquire acquires up to maxRecords records of one partition for the
// session's member and returns the record batches holding them.
func (m *shareManager) acquire(ctx context.Context, target shareFetchTarget, session *shareSession, maxRecords int, maxBytes int64, readCommitted bool) ([]byte, []share.AcquiredRecords, error) {
	member := session.key.member
	sp := m.partition(target.key)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	// Checked under sp.mu: closeSession removes the session before it
	// takes sp.mu to release the member's records, so either this sees
	// the session gone and acquires nothing, or the release comes after
	// and gives back what this acquires.
	if !m.isCurrent(session) {
		return nil, nil, nil
	}
	tp := target.tp
	if err := m.load(ctx, sp, tp); err != nil {
		return nil, nil, err
	}
	limit := tp.HighWatermark()
	if readCommitted {
		limit = tp.LastStableOffset()
	}
	from, ok := sp.state.NextFetchOffset(limit)
	if !ok {
		return nil, nil, nil
	}
	result, err := tp.Log().Read(from, limit, int(min(maxBytes, 1<<30)), true)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s at %d: %w", tp.Name(), from, err)
	}
	data := make([]byte, result.Bytes())
	at := 0
	for _, region := range result.Regions {
		n, err := region.ReadAt(data[at:at+int(region.Size)], 0)
		if err != nil && n != int(region.Size) {
			result.Release()
			return nil, nil, fmt.Errorf("read %s at %d: %w", tp.Name(), from, err)
		}
		at += n
	}
	result.Release()
	views, err := splitBatches(data)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s at %d: %w", tp.Name(), from, err)
	}
	var aborted []abortedRange
	if readCommitted {
		for _, a := range tp.Log().AbortedTxns(from, limit) {
			aborted = append(aborted, abortedRange{producerID: a.ProducerID, first: a.FirstOffset, last: a.LastOffset})
		}
	}
	batches := make([]share.Batch, 0, len(views))
	for _, v := range views {
		skip := v.Control() || (v.Transactional() && isAborted(aborted, v.ProducerID(), v.BaseOffset()))
		batches = append(batches, share.Batch{First: v.BaseOffset(), Last: v.LastOffset(), Skip: skip})
	}
	// Offsets below the SPEO were acquired before: taking one again is a
	// redelivery, whatever its count (a session's end gives records back
	// without counting the acquisition).
	delivered := sp.state.EndOffset()
	acquired := sp.state.Acquire(time.Now(), member, maxRecords, limit, batches)
	if len(acquired) == 0 {
		return nil, nil, nil
	}
	if err := m.persist(ctx, sp); err != nil {
		return nil, nil, err
	}
	m.b.countShareAcquired(acquired, delivered)
	// Send only the batches holding an acquired offset: usually all of
	// them, then the bytes read go out as they are.
	holds := func(v wire.BatchView) bool {
		for _, a := range acquired {
			if v.BaseOffset() <= a.Last && v.LastOffset() >= a.First {
				return true
			}
		}
		return false
	}
	kept := 0
	for _, v := range views {
		if holds(v) {
			kept++
		}
	}
	if kept == len(views) {
		return data, acquired, nil
	}
	out := make([]byte, 0, len(data))
	for _, v := range views {
		if holds(v) {
			out = append(out, v.Bytes()...)
		}
	}
	return out, acquired, nil
}

// abortedRange is one aborted transaction's offsets.
type abortedRange struct {
	producerID  int64
	first, last int64
}

func isAborted(aborted []abortedRange, producerID, offset int64) bool {
	for _, a := range aborted {
		if a.producerID == producerID && offset >= a.first && offset <= a.last {
			return true
		}
	}
	return false
}

// splitBatches splits whole record batches read from the log.
func splitBatches(data []byte) ([]wire.BatchView, error) {
	var views []wire.BatchView
	for len(data) > 0 {
		v, err := wire.ParseBatch(data)
		if err != nil {
			return nil, err
		}
		views = append(views, v)
		data = data[v.Size():]
	}
	return views, nil
}

// fillShareLeader sets a NOT_LEADER answer's current leader hint.
func (b *Broker) fillShareLeader(key sharePartitionKey, p *kmsg.ShareFetchResponseTopicPartition) {
	t := b.topicByID(key.topicID)
	if t == nil {
		return
	}
	roles := b.topicRoles(t.name)
	if int(key.partition) < len(roles) {
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = roles[key.partition].Leader, roles[key.partition].LeaderEpoch
	}
}

// shareErrorCode maps a share-partition error to its Kafka code.
func shareErrorCode(err error) int16 { return errcode.Of(err) }

// checkShareIDs refuses a share request's empty group id
// (INVALID_GROUP_ID) or a member id that is empty or longer than Kafka's
// 36 characters (INVALID_REQUEST); 0 when both are fine.
func checkShareIDs(groupID, memberID string) (code int16, message string) {
	switch {
	case groupID == "":
		return kerr.InvalidGroupID.Code, "GroupId can't be empty"
	case memberID == "" || len(memberID) > 36:
		return kerr.InvalidRequest.Code, "MemberId must be 1 to 36 characters"
	}
	return 0, ""
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
