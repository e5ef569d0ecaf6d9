package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/share"
)

// shareAcknowledge serves one ShareAcknowledge: the acknowledgements of a
// member's session at its next epoch (epoch 0 has no session to
// acknowledge in: INVALID_SHARE_SESSION_EPOCH), or at -1 the last ones
// before the session closes and releases what is left.
func (m *shareManager) shareAcknowledge(ctx context.Context, req *kmsg.ShareAcknowledgeRequest, allowed shareTopicAllowed) *kmsg.ShareAcknowledgeResponse {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	groupID, memberID := derefString(req.GroupID), derefString(req.MemberID)
	resp.AcquisitionLockTimeoutMillis = int32(m.b.shareConfig(groupID).LockDuration.Milliseconds())
	fail := func(code int16, message string) *kmsg.ShareAcknowledgeResponse {
		resp.ErrorCode, resp.ErrorMessage = code, &message
		return resp
	}
	if code, message := checkShareIDs(groupID, memberID); code != 0 {
		return fail(code, message)
	}
	switch {
	case req.ShareSessionEpoch == 0 || req.ShareSessionEpoch < -1:
		return fail(kerr.InvalidShareSessionEpoch.Code, fmt.Sprintf("share session epoch %d can't acknowledge", req.ShareSessionEpoch))
	}
	key := shareSessionKey{group: groupID, member: memberID}
	var closing *shareSession
	var err error
	if req.ShareSessionEpoch == -1 {
		closing, err = m.takeSession(key)
	} else {
		_, err = m.advanceSession(key, req.ShareSessionEpoch, nil, nil)
	}
	if err != nil {
		return fail(shareSessionCode(err), err.Error())
	}
	maxType := share.AckReject
	if req.Version >= 2 && req.IsRenewAck {
		maxType = share.AckRenew
	}
	for _, rt := range req.Topics {
		topic := kmsg.NewShareAcknowledgeResponseTopic()
		topic.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewShareAcknowledgeResponseTopicPartition()
			p.Partition = rp.Partition
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
			pk := sharePartitionKey{group: groupID, topicID: rt.TopicID, partition: rp.Partition}
			batches := make([]shareAckBatch, 0, len(rp.AcknowledgementBatches))
			for _, b := range rp.AcknowledgementBatches {
				batches = append(batches, shareAckBatch{first: b.FirstOffset, last: b.LastOffset, types: b.AcknowledgeTypes})
			}
			tp, err := m.b.resolveShare(pk, allowed)
			if err == nil {
				err = m.acknowledge(ctx, pk, tp, memberID, batches, maxType)
			}
			if err != nil {
				p.ErrorCode = shareErrorCode(err)
				message := err.Error()
				p.ErrorMessage = &message
			}
			topic.Partitions = append(topic.Partitions, p)
		}
		resp.Topics = append(resp.Topics, topic)
	}
	if closing != nil {
		m.releaseMember(ctx, closing)
	}
	return resp
}

// shareService is the broker's api.Shares.
type shareService struct{ b *Broker }

func (s shareService) Fetch(ctx context.Context, req *kmsg.ShareFetchRequest, allowed func(string) bool, closed <-chan struct{}) *kmsg.ShareFetchResponse {
	return s.b.shares.shareFetch(ctx, req, allowed, closed)
}

func (s shareService) Acknowledge(ctx context.Context, req *kmsg.ShareAcknowledgeRequest, allowed func(string) bool) *kmsg.ShareAcknowledgeResponse {
	return s.b.shares.shareAcknowledge(ctx, req, allowed)
}

func (s shareService) HeartbeatSettings(groupID string) (time.Duration, time.Duration) {
	settings := s.b.groupSettings(groupID)
	return settings.ShareSessionTimeout, settings.ShareHeartbeatInterval
}

func (s shareService) Lag(topicID [16]byte, partition int32, state group.ShareState) int64 {
	t := s.b.topicByID(topicID)
	if t == nil {
		return -1
	}
	tp, err := s.b.partitionOf(t, partition)
	if err != nil {
		return -1
	}
	highWatermark := tp.HighWatermark()
	lag := highWatermark - state.StartOffset
	for _, batch := range state.Batches {
		if batch.State == int8(share.Acknowledged) || batch.State == int8(share.Archived) {
			lag -= min(batch.Last, highWatermark-1) - batch.First + 1
		}
	}
	return max(lag, 0)
}
