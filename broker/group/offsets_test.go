package group

import (
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// storeKinds runs a test on the in-memory store and on the log store.
func storeKinds(t *testing.T, run func(t *testing.T, openStore func() OffsetStore)) {
	t.Run("memory", func(t *testing.T) {
		store := NewMemoryStore()
		run(t, func() OffsetStore { return store })
	})
	t.Run("log", func(t *testing.T) {
		dir := t.TempDir()
		run(t, func() OffsetStore {
			store, err := OpenLogStore(dir, storage.Options{})
			if err != nil {
				t.Fatalf("open log store: %v", err)
			}
			return store
		})
	})
}

// simpleCommit commits offsets with generation -1 and no member (v8).
func (h *harness) simpleCommit(groupID, topic string, offsets map[int32]int64) *kmsg.OffsetCommitResponse {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group = groupID
	commitTopic := kmsg.OffsetCommitRequestTopic{Topic: topic}
	for partition, offset := range offsets {
		metadata := "meta"
		commitTopic.Partitions = append(commitTopic.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: partition, Offset: offset, LeaderEpoch: 7, Metadata: &metadata})
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{commitTopic}
	resp := h.c.OffsetCommit(testCtx, req)
	for _, partition := range resp.Topics[0].Partitions {
		if partition.ErrorCode != 0 {
			h.t.Fatalf("commit %s-%d: error %d", topic, partition.Partition, partition.ErrorCode)
		}
	}
	return resp
}

// fetched returns the committed offsets of groupID (v8, all topics).
func (h *harness) fetched(groupID string) map[topicPartition]int64 {
	h.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: groupID}}
	resp := h.c.OffsetFetch(testCtx, req)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		h.t.Fatalf("fetch: %+v", resp)
	}
	out := make(map[topicPartition]int64)
	for _, topic := range resp.Groups[0].Topics {
		for _, partition := range topic.Partitions {
			out[topicPartition{Topic: topic.Topic, Partition: partition.Partition}] = partition.Offset
		}
	}
	return out
}

// Offsets and the group's generation survive a coordinator restart, on
// both stores; the latest value per key wins and deleted offsets stay
// deleted.
func TestOffsetsSurviveRestart(t *testing.T) {
	storeKinds(t, func(t *testing.T, openStore func() OffsetStore) {
		h := newHarnessWith(t, openStore, nil)
		h.simpleCommit("simple", "events", map[int32]int64{0: 10, 1: 11})
		h.simpleCommit("simple", "events", map[int32]int64{0: 20})
		h.simpleCommit("simple", "events", map[int32]int64{0: 15})
		h.simpleCommit("simple", "other", map[int32]int64{3: 5})
		remove := kmsg.NewPtrOffsetDeleteRequest()
		remove.Group = "simple"
		remove.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "other", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 3}}}}
		if resp := h.c.OffsetDelete(testCtx, remove); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("offset delete: %+v", resp)
		}

		joined := await(t, h.joinAsync(newJoin(9, "consumers", h.memberID("consumers"))), "join")
		sync := h.c.SyncGroup(testCtx, newSync(5, "consumers", joined.MemberID, joined.Generation, map[string]string{joined.MemberID: "mine"}))
		if sync.ErrorCode != 0 {
			t.Fatalf("sync: %d", sync.ErrorCode)
		}
		if code := commitCode(h, "consumers", joined.MemberID, joined.Generation); code != 0 {
			t.Fatalf("member commit: %d", code)
		}

		h.restart()
		want := map[topicPartition]int64{{Topic: "events", Partition: 0}: 15, {Topic: "events", Partition: 1}: 11}
		got := h.fetched("simple")
		if len(got) != len(want) || got[topicPartition{"events", 0}] != 15 || got[topicPartition{"events", 1}] != 11 {
			t.Fatalf("after restart: got %v, want %v", got, want)
		}
		if got := h.fetched("consumers"); got[topicPartition{"events", 0}] != 42 {
			t.Fatalf("member commit after restart: %v", got)
		}
		// The group comes back Stable in its generation: the member carries on.
		if code := h.heartbeat("consumers", joined.MemberID, joined.Generation); code != 0 {
			t.Fatalf("heartbeat after restart: %d", code)
		}
		resync := h.c.SyncGroup(testCtx, newSync(5, "consumers", joined.MemberID, joined.Generation, nil))
		if resync.ErrorCode != 0 || string(resync.MemberAssignment) != "mine" {
			t.Fatalf("assignment after restart: %+v", resync)
		}
		if code := commitCode(h, "consumers", joined.MemberID, joined.Generation-1); code != kerr.IllegalGeneration.Code {
			t.Fatalf("stale commit after restart: %d", code)
		}
	})
}

// OffsetFetch of an unknown group or partition returns -1 without error, in
// every request shape.
func TestOffsetFetchUnknown(t *testing.T) {
	h := newHarness(t, nil)
	h.simpleCommit("known", "events", map[int32]int64{0: 3})
	for _, version := range []int16{1, 2, 5, 7} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = version
		req.Group = "nobody"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "events", Partitions: []int32{0, 1}}}
		resp := h.c.OffsetFetch(testCtx, req)
		if resp.Version != version || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: %+v", version, resp)
		}
		for _, partition := range resp.Topics[0].Partitions {
			if partition.Offset != -1 || partition.ErrorCode != 0 || partition.LeaderEpoch != -1 {
				t.Fatalf("v%d unknown group partition: %+v", version, partition)
			}
		}
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "nobody", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "events", Partitions: []int32{0}}}},
		{Group: "known", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "events", Partitions: []int32{0, 9}}}},
		{Group: "nobody"}, // null topics: all of nothing
	}
	resp := h.c.OffsetFetch(testCtx, req)
	if len(resp.Groups) != 3 || resp.Groups[0].Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("batched fetch: %+v", resp)
	}
	known := resp.Groups[1].Topics[0].Partitions
	if known[0].Offset != 3 || known[0].LeaderEpoch != 7 || *known[0].Metadata != "meta" || known[1].Offset != -1 {
		t.Fatalf("batched fetch of known group: %+v", known)
	}
	if len(resp.Groups[2].Topics) != 0 {
		t.Fatalf("all offsets of an unknown group: %+v", resp.Groups[2])
	}
	v5 := kmsg.NewPtrOffsetFetchRequest()
	v5.Version = 5
	v5.Group = "known"
	v5.Topics = nil
	all := h.c.OffsetFetch(testCtx, v5)
	if len(all.Topics) != 1 || all.Topics[0].Partitions[0].Offset != 3 || all.Topics[0].Partitions[0].LeaderEpoch != 7 {
		t.Fatalf("v5 null topics must return every committed offset: %+v", all)
	}
}

type fixedTopics map[string][16]byte

func (f fixedTopics) TopicName(id [16]byte) (string, bool) {
	for name, known := range f {
		if known == id {
			return name, true
		}
	}
	return "", false
}

func (f fixedTopics) TopicID(name string) ([16]byte, bool) {
	id, ok := f[name]
	return id, ok
}

// v10 of OffsetCommit and OffsetFetch name topics by id.
func TestOffsetsByTopicID(t *testing.T) {
	eventsID := [16]byte{1, 2, 3}
	h := newHarness(t, func(cfg *Config) { cfg.Topics = fixedTopics{"events": eventsID} })
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 10
	req.Group = "g"
	req.Topics = []kmsg.OffsetCommitRequestTopic{
		{TopicID: eventsID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 77, LeaderEpoch: -1}}},
		{TopicID: [16]byte{9}, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}},
	}
	resp := h.c.OffsetCommit(testCtx, req)
	if resp.Topics[0].TopicID != eventsID || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("v10 commit: %+v", resp)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 10
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
	got := h.c.OffsetFetch(testCtx, fetch)
	topics := got.Groups[0].Topics
	if len(topics) != 1 || topics[0].TopicID != eventsID || topics[0].Partitions[0].Offset != 77 {
		t.Fatalf("v10 fetch: %+v", got)
	}
}

// Simple commits are refused while the group has members; OffsetDelete
// refuses topics the consumers subscribe to; DeleteGroups refuses a group
// with members and deletes an empty one with its offsets.
func TestDeleteOffsetsAndGroups(t *testing.T) {
	h := newHarness(t, nil)
	h.simpleCommit("g", "events", map[int32]int64{0: 1})
	h.simpleCommit("g", "unsubscribed", map[int32]int64{0: 2})
	joined := await(t, h.joinAsync(newJoin(9, "g", h.memberID("g"))), "join")
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group = "g"
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "events", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
	if code := h.c.OffsetCommit(testCtx, req).Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownMemberID.Code {
		t.Fatalf("simple commit to an active group: got %d", code)
	}
	remove := kmsg.NewPtrOffsetDeleteRequest()
	remove.Group = "g"
	remove.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "events", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "unsubscribed", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
	}
	resp := h.c.OffsetDelete(testCtx, remove)
	if resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code || resp.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", resp)
	}
	if got := h.fetched("g"); len(got) != 1 || got[topicPartition{"events", 0}] != 1 {
		t.Fatalf("after offset delete: %v", got)
	}
	deleteReq := kmsg.NewPtrDeleteGroupsRequest()
	deleteReq.Version = 2
	deleteReq.Groups = []string{"g", "missing"}
	deleted := h.c.DeleteGroups(testCtx, deleteReq)
	if deleted.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code || deleted.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete groups: %+v", deleted)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 0
	leave.Group, leave.MemberID = "g", joined.MemberID
	if code := h.c.LeaveGroup(testCtx, leave).ErrorCode; code != 0 {
		t.Fatalf("leave v0: %d", code)
	}
	deleteReq.Groups = []string{"g"}
	if code := h.c.DeleteGroups(testCtx, deleteReq).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("delete empty group: %d", code)
	}
	if got := h.fetched("g"); len(got) != 0 {
		t.Fatalf("offsets of a deleted group: %v", got)
	}
	h.restart()
	if got := h.fetched("g"); len(got) != 0 {
		t.Fatalf("offsets of a deleted group after restart: %v", got)
	}
}

// Offsets of an empty group expire offsets.retention after it emptied (or,
// for a simple group, after their commit); the group then disappears.
func TestOffsetExpiry(t *testing.T) {
	h := newHarness(t, func(cfg *Config) {
		cfg.OffsetsRetention = time.Hour
		cfg.OffsetsRetentionCheckInterval = time.Minute
	})
	h.simpleCommit("simple", "events", map[int32]int64{0: 1})
	h.tickAfter(30 * time.Minute)
	h.simpleCommit("simple", "events", map[int32]int64{1: 2})
	h.tickAfter(30 * time.Minute)
	if got := h.fetched("simple"); len(got) != 1 || got[topicPartition{"events", 1}] != 2 {
		t.Fatalf("after the first offset's retention: %v", got)
	}
	h.tickAfter(30 * time.Minute)
	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 5
	if groups := h.c.ListGroups(testCtx, list).Groups; len(groups) != 0 {
		t.Fatalf("an expired group must disappear: %+v", groups)
	}
	h.restart()
	if got := h.fetched("simple"); len(got) != 0 {
		t.Fatalf("expired offsets came back after restart: %v", got)
	}
}

// Transactional offsets are invisible until the transaction commits,
// dropped on abort, and stay pending across a restart.
func TestTxnOffsetCommit(t *testing.T) {
	storeKinds(t, func(t *testing.T, openStore func() OffsetStore) {
		h := newHarnessWith(t, openStore, nil)
		h.simpleCommit("g", "events", map[int32]int64{0: 5})
		txnCommit := func(producerID int64, offset int64) {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version = 3
			req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "g", producerID, 0, -1
			req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "events", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
			if code := h.c.TxnOffsetCommit(testCtx, req).Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("txn offset commit: %d", code)
			}
		}
		stableFetch := func() (int64, int16) {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version = 7
			req.Group, req.RequireStable = "g", true
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "events", Partitions: []int32{0}}}
			partition := h.c.OffsetFetch(testCtx, req).Topics[0].Partitions[0]
			return partition.Offset, partition.ErrorCode
		}
		txnCommit(100, 50)
		if got := h.fetched("g")[topicPartition{"events", 0}]; got != 5 {
			t.Fatalf("pending transactional offset visible: %d", got)
		}
		if _, code := stableFetch(); code != kerr.UnstableOffsetCommit.Code {
			t.Fatalf("require-stable fetch with a pending transaction: %d", code)
		}
		if err := h.c.CompleteTxn(testCtx, 100, 0, false); err != nil {
			t.Fatal(err)
		}
		if offset, code := stableFetch(); offset != 5 || code != 0 {
			t.Fatalf("after abort: offset %d code %d", offset, code)
		}
		txnCommit(101, 60)
		h.restart()
		if got := h.fetched("g")[topicPartition{"events", 0}]; got != 5 {
			t.Fatalf("pending offset applied by the restart: %d", got)
		}
		if _, code := stableFetch(); code != kerr.UnstableOffsetCommit.Code {
			t.Fatalf("pending offset lost by the restart: %d", code)
		}
		if err := h.c.CompleteTxn(testCtx, 101, 0, true); err != nil {
			t.Fatal(err)
		}
		if offset, code := stableFetch(); offset != 60 || code != 0 {
			t.Fatalf("after commit: offset %d code %d", offset, code)
		}
		h.restart()
		if got := h.fetched("g")[topicPartition{"events", 0}]; got != 60 {
			t.Fatalf("committed transactional offset after restart: %d", got)
		}
	})
}

// A failing store fails the commit and leaves the previous offset.
func TestCommitStoreFailure(t *testing.T) {
	store := NewMemoryStore()
	h := newHarnessWith(t, func() OffsetStore { return store }, nil)
	h.simpleCommit("g", "events", map[int32]int64{0: 1})
	store.SetAppendError(kerr.KafkaStorageError)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group = "g"
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "events", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 9}}}}
	if code := h.c.OffsetCommit(testCtx, req).Topics[0].Partitions[0].ErrorCode; code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit on a failing store: %d", code)
	}
	if got := h.fetched("g")[topicPartition{"events", 0}]; got != 1 {
		t.Fatalf("failed commit applied: %d", got)
	}
}
