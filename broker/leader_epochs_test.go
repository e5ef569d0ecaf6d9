package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/storage"
)

// TestLeaderEpochCacheEndOffsets checks OffsetForLeaderEpoch's answers
// against Kafka's LeaderEpochFileCache rules, and that the checkpoint file
// survives a reopen and follows truncations.
func TestLeaderEpochCacheEndOffsets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cache, err := openLeaderEpochCache(storage.OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if epoch, end := cache.endOffsetFor(0, 0); epoch != -1 || end != -1 {
		t.Fatalf("empty cache: (%d, %d), want (-1, -1)", epoch, end)
	}
	for _, e := range []epochEntry{{1, 0}, {3, 100}, {6, 250}} {
		if err := cache.assign(e.epoch, e.startOffset); err != nil {
			t.Fatal(err)
		}
	}
	if err := cache.assign(2, 300); err != nil || len(cache.entries) != 3 {
		t.Fatalf("an older epoch was recorded: %+v, %v", cache.entries, err)
	}
	const logEnd = 400
	for _, c := range []struct {
		requested, epoch int32
		end              int64
	}{
		{6, 6, logEnd}, // the current epoch ends at the log end
		{3, 3, 250},    // a known epoch ends where the next starts
		{4, 3, 250},    // unknown: the largest epoch below it, the next start above
		{5, 3, 250},
		{0, 0, 0},   // below every known epoch: itself, the first start
		{7, -1, -1}, // above every known epoch
		{-1, -1, -1},
	} {
		if epoch, end := cache.endOffsetFor(c.requested, logEnd); epoch != c.epoch || end != c.end {
			t.Errorf("epoch %d: (%d, %d), want (%d, %d)", c.requested, epoch, end, c.epoch, c.end)
		}
	}
	reopened, err := openLeaderEpochCache(storage.OSFS{}, dir)
	if err != nil || !slices.Equal(reopened.entries, cache.entries) {
		t.Fatalf("reopened checkpoint: %+v, %v; want %+v", reopened.entries, err, cache.entries)
	}
	if err := reopened.truncateFromEnd(250); err != nil {
		t.Fatal(err)
	}
	again, err := openLeaderEpochCache(storage.OSFS{}, dir)
	if err != nil || !slices.Equal(again.entries, []epochEntry{{1, 0}, {3, 100}}) {
		t.Fatalf("after truncation to 250: %+v, %v", again.entries, err)
	}
}

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
	if got := lp.epochs.entries; !slices.Equal(got, []epochEntry{{0, 0}, {1, 7}}) {
		t.Fatalf("new leader's epochs before any write: %+v, want [{0 0} {1 7}]", got)
	}
	reopened, err := openLeaderEpochCache(storage.OSFS{}, lp.log.Dir())
	if err != nil || !slices.Equal(reopened.entries, lp.epochs.entries) {
		t.Fatalf("leader-epoch checkpoint on disk: %+v, %v", reopened.entries, err)
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
