package group

import (
	"testing"
	"time"
)

// A consumer-protocol member's commits are checked against its member
// epoch: the current epoch lands; an old epoch is STALE_MEMBER_EPOCH; a
// member that left or expired is UNKNOWN_MEMBER_ID, also for transactional
// commits (so a fenced member's transaction can never commit offsets);
// plain commits below OffsetCommit v9 are UNSUPPORTED_VERSION.
func TestConsumerGroupCommitsCheckMemberEpochs(t *testing.T) {
	catalog := &fakeCatalog{topics: map[string]int32{"a": 2}}
	h := newHarness(t, func(cfg *Config) { cfg.Catalog = catalog; cfg.ConsumerSessionTimeout = 10 * time.Second })
	join := func(id string) ConsumerHeartbeatResult {
		t.Helper()
		result, err := h.c.ConsumerHeartbeat(testCtx, ConsumerHeartbeatRequest{Group: "g", MemberID: id, RebalanceTimeoutMillis: 1000,
			SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}, MemberIDRequired: true, Client: testClient})
		if err != nil {
			t.Fatalf("join %s: %v", id, err)
		}
		return result
	}
	commit := func(id string, epoch int32, txn, legacy bool) error {
		req := CommitRequest{Group: "g", MemberID: id, Generation: epoch, LegacyVersion: legacy,
			Topics: []CommitTopic{{Name: "a", Partitions: []CommitPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}}}}
		if txn {
			return h.c.CommitTxnOffsets(testCtx, TxnCommitRequest{CommitRequest: req, ProducerID: 7})[0][0]
		}
		return h.c.CommitOffsets(testCtx, req)[0][0]
	}
	first := join("m1")
	wantErr(t, "current epoch", commit("m1", first.MemberEpoch, false, false), nil)
	wantErr(t, "current epoch, transactional", commit("m1", first.MemberEpoch, true, false), nil)
	wantErr(t, "old epoch", commit("m1", first.MemberEpoch-1, false, false), ErrStaleMemberEpoch)
	wantErr(t, "old epoch, transactional", commit("m1", first.MemberEpoch+1, true, false), ErrStaleMemberEpoch)
	wantErr(t, "OffsetCommit v8", commit("m1", first.MemberEpoch, false, true), ErrUnsupportedVersion)
	wantErr(t, "unknown member", commit("nobody", 1, true, false), ErrUnknownMember)
	wantErr(t, "no member while members exist", commit("", -1, false, false), ErrUnknownMember)
	join("m2")
	h.tickAfter(6 * time.Second)
	if _, err := h.c.ConsumerHeartbeat(testCtx, ConsumerHeartbeatRequest{Group: "g", MemberID: "m2", MemberEpoch: first.MemberEpoch + 1, RebalanceTimeoutMillis: -1, MemberIDRequired: true}); err != nil {
		t.Fatalf("m2 heartbeat: %v", err)
	}
	h.tickAfter(6 * time.Second) // m1's session (10 s) has passed; m2 heartbeated 6 s ago
	wantErr(t, "expired member, transactional", commit("m1", first.MemberEpoch, true, false), ErrUnknownMember)
	wantErr(t, "expired member", commit("m1", first.MemberEpoch, false, false), ErrUnknownMember)
}
