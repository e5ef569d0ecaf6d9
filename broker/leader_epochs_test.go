package broker

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/partition"
)

// TestReplicationLeaderEpochChecks: a new leader records its epoch at its
// log end before writing anything, answers OffsetForLeaderEpoch from the
// checkpoint, fences requests naming an older leader epoch, and answers
// UNKNOWN_LEADER_EPOCH to a newer one; a follower sends clients away; and
// Metadata reports the controller's roles.
func TestReplicationLeaderEpochChecks(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, nil)
	c.createTopic("epochs", 1)
	old := c.role("epochs", 0).Leader
	mustProduce(t, "epoch 0 batch", dialRaw(t, c.broker(old)).produceAcks("epochs", 0, plainBatch(t, "e0", 7), -1), 0)
	c.waitCaughtUp("epochs", 0)
	c.kill(old)
	role := c.role("epochs", 0)
	lp := c.localPartition(role.Leader, "epochs", 0)
	latest, _, _ := lp.LatestEpochAndEnds()
	if epoch, end := lp.EndOffsetForEpoch(0); latest != 1 || epoch != 0 || end != 7 {
		t.Fatalf("new leader's epochs before any write: latest %d, epoch 0 ends at (%d, %d); want 1, (0, 7)", latest, epoch, end)
	}
	checkpoint, err := os.ReadFile(filepath.Join(lp.Log().Dir(), partition.LeaderEpochCheckpointFile))
	if err != nil || string(checkpoint) != "0\n2\n0 0\n1 7\n" {
		t.Fatalf("leader-epoch checkpoint on disk: %q, %v; want epochs 0 at 0 and 1 at 7", checkpoint, err)
	}
	raw := dialRaw(t, c.broker(role.Leader))
	for _, q := range []struct {
		current, requested int32
		code               int16
		epoch              int32
		end                int64
	}{
		{1, 0, 0, 0, 7},
		{1, 1, 0, 1, 7},
		{-1, 0, 0, 0, 7},
		{0, 0, kerr.FencedLeaderEpoch.Code, -1, -1},
		{2, 0, kerr.UnknownLeaderEpoch.Code, -1, -1},
	} {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "epochs"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = q.current, q.requested
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw.request(req, 4)
		resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
		raw.response(resp, 4)
		got := resp.Topics[0].Partitions[0]
		if got.ErrorCode != q.code || got.LeaderEpoch != q.epoch || got.EndOffset != q.end {
			t.Errorf("OffsetForLeaderEpoch(current %d, epoch %d): code %d (%d, %d), want code %d (%d, %d)",
				q.current, q.requested, got.ErrorCode, got.LeaderEpoch, got.EndOffset, q.code, q.epoch, q.end)
		}
	}
	for _, q := range []struct {
		broker  int32
		current int32
		code    int16
	}{
		{role.Leader, 0, kerr.FencedLeaderEpoch.Code},
		{role.Leader, 2, kerr.UnknownLeaderEpoch.Code},
		{role.Leader, 1, 0},
		{otherISRMember(role), 1, kerr.NotLeaderForPartition.Code},
	} {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 10, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "epochs"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = q.current, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		conn := dialRaw(t, c.broker(q.broker))
		conn.request(req, 12)
		resp := kmsg.NewPtrFetchResponse()
		conn.response(resp, 12)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != q.code {
			t.Errorf("Fetch at broker %d with current epoch %d: code %d, want %d", q.broker, q.current, got, q.code)
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("epochs")}}
	raw.request(meta, 12)
	resp := kmsg.NewPtrMetadataResponse()
	raw.response(resp, 12)
	mp := resp.Topics[0].Partitions[0]
	if len(resp.Brokers) != 2 || mp.Leader != role.Leader || mp.LeaderEpoch != 1 ||
		!slices.Equal(mp.Replicas, role.Replicas) || !slices.Equal(mp.ISR, role.ISR) {
		t.Fatalf("Metadata: %d brokers, partition %+v; want the role %+v", len(resp.Brokers), mp, role)
	}
}

// otherISRMember is an ISR member that is not the leader.
func otherISRMember(role PartitionRole) int32 {
	for _, id := range role.ISR {
		if id != role.Leader {
			return id
		}
	}
	return -1
}
