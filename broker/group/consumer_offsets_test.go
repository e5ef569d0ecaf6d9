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

// An admin's LeaveGroup naming a consumer-protocol static member by its
// instance id removes it for good, as Kafka's does: its partitions go to
// the others at once, instead of waiting for the session to end after the
// member's own (temporary) leave. Unknown instance ids and members named
// by member id alone are UNKNOWN_MEMBER_ID.
func TestConsumerGroupAdminLeaveRemovesStaticMember(t *testing.T) {
	catalog := &fakeCatalog{topics: map[string]int32{"a": 2}}
	h := newHarness(t, func(cfg *Config) { cfg.Catalog = catalog })
	join := func(id string, instance *string) ConsumerHeartbeatResult {
		t.Helper()
		result, err := h.c.ConsumerHeartbeat(testCtx, ConsumerHeartbeatRequest{Group: "g", MemberID: id, InstanceID: instance,
			RebalanceTimeoutMillis: 1000, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}, MemberIDRequired: true, Client: testClient})
		if err != nil {
			t.Fatalf("join %s: %v", id, err)
		}
		return result
	}
	instance := "static-1"
	first := join("m1", &instance)
	if _, err := h.c.ConsumerHeartbeat(testCtx, ConsumerHeartbeatRequest{Group: "g", MemberID: "m1", InstanceID: &instance,
		MemberEpoch: StaticLeaveEpoch}); err != nil {
		t.Fatalf("static leave: %v", err)
	}
	unknown := "nobody"
	errs, err := h.c.Leave(testCtx, "g", []Leaver{{InstanceID: &instance}, {InstanceID: &unknown}, {MemberID: "m1"}})
	if err != nil {
		t.Fatalf("leave: %v", err)
	}
	wantErr(t, "static member by instance id", errs[0], nil)
	wantErr(t, "unknown instance id", errs[1], ErrUnknownMember)
	wantErr(t, "member id alone", errs[2], ErrUnknownMember)
	second := join("m2", nil)
	owned := 0
	if second.Assignment != nil {
		for _, topic := range *second.Assignment {
			owned += len(topic.Partitions)
		}
	}
	if owned != 2 {
		t.Fatalf("m2 got %d partitions after m1 (epoch %d) was removed, want both", owned, first.MemberEpoch)
	}
}
