package group

import (
	"errors"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
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

// simpleCommit commits offsets with generation -1 and no member.
func (h *harness) simpleCommit(groupID, topic string, offsets map[int32]int64) {
	h.t.Helper()
	committed := CommitTopic{Name: topic}
	for partition, offset := range offsets {
		metadata := "meta"
		committed.Partitions = append(committed.Partitions, CommitPartition{Partition: partition, Offset: offset, LeaderEpoch: 7, Metadata: &metadata})
	}
	errs := h.c.CommitOffsets(testCtx, CommitRequest{Group: groupID, Generation: -1, Topics: []CommitTopic{committed}})
	for i, err := range errs[0] {
		if err != nil {
			h.t.Fatalf("commit %s-%d: %v", topic, committed.Partitions[i].Partition, err)
		}
	}
}

// fetched returns the committed offsets of groupID (all topics).
func (h *harness) fetched(groupID string) map[topicPartition]int64 {
	h.t.Helper()
	topics, err := h.c.FetchOffsets(FetchRequest{Group: groupID})
	if err != nil {
		h.t.Fatalf("fetch: %v", err)
	}
	out := make(map[topicPartition]int64)
	for _, topic := range topics {
		for _, partition := range topic.Partitions {
			out[topicPartition{Topic: topic.Name, Partition: partition.Partition}] = partition.Offset
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
		errs, err := h.c.DeleteOffsets(testCtx, "simple", []DeleteOffsetsTopic{{Name: "other", Partitions: []int32{3}}})
		if err != nil || errs[0][0] != nil {
			t.Fatalf("offset delete: %v %v", err, errs)
		}

		joined := h.join(newJoin("consumers", h.memberID("consumers")))
		sync := h.sync(newSync("consumers", joined.MemberID, joined.Generation, map[string]string{joined.MemberID: "mine"}))
		wantErr(t, "sync", sync.err, nil)
		wantErr(t, "member commit", commitErr(h, "consumers", joined.MemberID, joined.Generation), nil)

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
		wantErr(t, "heartbeat after restart", h.heartbeat("consumers", joined.MemberID, joined.Generation), nil)
		resync := h.sync(newSync("consumers", joined.MemberID, joined.Generation, nil))
		if resync.err != nil || string(resync.Assignment) != "mine" {
			t.Fatalf("assignment after restart: %+v", resync)
		}
		wantErr(t, "stale commit after restart", commitErr(h, "consumers", joined.MemberID, joined.Generation-1), ErrIllegalGeneration)
	})
}

// OffsetFetch of an unknown group or partition returns -1 without error;
// a request without topics returns every committed offset.
func TestOffsetFetchUnknown(t *testing.T) {
	h := newHarness(t, nil)
	h.simpleCommit("known", "events", map[int32]int64{0: 3})
	topics, err := h.c.FetchOffsets(FetchRequest{Group: "nobody", Topics: []FetchTopic{{Name: "events", Partitions: []int32{0, 1}}}})
	if err != nil || len(topics) != 1 || len(topics[0].Partitions) != 2 {
		t.Fatalf("unknown group: %+v %v", topics, err)
	}
	for _, partition := range topics[0].Partitions {
		if partition.Offset != -1 || partition.Err != nil || partition.LeaderEpoch != -1 {
			t.Fatalf("unknown group partition: %+v", partition)
		}
	}
	known, _ := h.c.FetchOffsets(FetchRequest{Group: "known", Topics: []FetchTopic{{Name: "events", Partitions: []int32{0, 9}}}})
	partitions := known[0].Partitions
	if partitions[0].Offset != 3 || partitions[0].LeaderEpoch != 7 || partitions[0].Metadata != "meta" || partitions[1].Offset != -1 {
		t.Fatalf("fetch of a known group: %+v", partitions)
	}
	if all, err := h.c.FetchOffsets(FetchRequest{Group: "nobody"}); err != nil || len(all) != 0 {
		t.Fatalf("all offsets of an unknown group: %+v %v", all, err)
	}
	all, _ := h.c.FetchOffsets(FetchRequest{Group: "known"})
	if len(all) != 1 || all[0].Partitions[0].Offset != 3 || all[0].Partitions[0].LeaderEpoch != 7 {
		t.Fatalf("no topics must return every committed offset: %+v", all)
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

// Commits and fetches may name topics by id.
func TestOffsetsByTopicID(t *testing.T) {
	eventsID := [16]byte{1, 2, 3}
	h := newHarness(t, func(cfg *Config) { cfg.Topics = fixedTopics{"events": eventsID} })
	h.simpleCommit("g", "no-id", map[int32]int64{0: 1})
	errs := h.c.CommitOffsets(testCtx, CommitRequest{Group: "g", Generation: -1, ByTopicID: true, Topics: []CommitTopic{
		{ID: eventsID, Partitions: []CommitPartition{{Partition: 0, Offset: 77, LeaderEpoch: -1}}},
		{ID: [16]byte{9}, Partitions: []CommitPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}},
	}})
	wantErr(t, "commit by a known id", errs[0][0], nil)
	wantErr(t, "commit by an unknown id", errs[1][0], ErrUnknownTopicID)
	topics, err := h.c.FetchOffsets(FetchRequest{Group: "g", ByTopicID: true})
	if err != nil || len(topics) != 1 || topics[0].ID != eventsID || topics[0].Name != "events" || topics[0].Partitions[0].Offset != 77 {
		t.Fatalf("fetch all by id (a topic without id is left out): %+v %v", topics, err)
	}
	topics, _ = h.c.FetchOffsets(FetchRequest{Group: "g", ByTopicID: true, Topics: []FetchTopic{
		{ID: eventsID, Partitions: []int32{0}}, {ID: [16]byte{9}, Partitions: []int32{0}},
	}})
	if topics[0].Partitions[0].Offset != 77 || topics[1].ID != [16]byte{9} {
		t.Fatalf("fetch by id: %+v", topics)
	}
	wantErr(t, "fetch by an unknown id", topics[1].Partitions[0].Err, ErrUnknownTopicID)
}

// Simple commits are refused while the group has members; OffsetDelete
// refuses topics the consumers subscribe to; DeleteGroups refuses a group
// with members and deletes an empty one with its offsets.
func TestDeleteOffsetsAndGroups(t *testing.T) {
	h := newHarness(t, nil)
	h.simpleCommit("g", "events", map[int32]int64{0: 1})
	h.simpleCommit("g", "unsubscribed", map[int32]int64{0: 2})
	joined := h.join(newJoin("g", h.memberID("g")))
	errs := h.c.CommitOffsets(testCtx, CommitRequest{Group: "g", Generation: -1, Topics: []CommitTopic{
		{Name: "events", Partitions: []CommitPartition{{Partition: 0, Offset: 5}}},
	}})
	wantErr(t, "simple commit to an active group", errs[0][0], ErrUnknownMember)
	errs, err := h.c.DeleteOffsets(testCtx, "g", []DeleteOffsetsTopic{{Name: "events", Partitions: []int32{0}}, {Name: "unsubscribed", Partitions: []int32{0}}})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "delete offsets of a subscribed topic", errs[0][0], ErrSubscribedTopic)
	wantErr(t, "delete offsets of another topic", errs[1][0], nil)
	if got := h.fetched("g"); len(got) != 1 || got[topicPartition{"events", 0}] != 1 {
		t.Fatalf("after offset delete: %v", got)
	}
	_, err = h.c.DeleteOffsets(testCtx, "missing", nil)
	wantErr(t, "delete offsets of a missing group", err, ErrGroupNotFound)
	deleted := h.c.DeleteGroups(testCtx, []string{"g", "missing"})
	wantErr(t, "delete a group with members", deleted[0], ErrNonEmptyGroup)
	wantErr(t, "delete a missing group", deleted[1], ErrGroupNotFound)
	errs2, err := h.c.Leave(testCtx, "g", []Leaver{{MemberID: joined.MemberID}})
	if err != nil || errs2[0] != nil {
		t.Fatalf("leave: %v %v", err, errs2)
	}
	wantErr(t, "delete an empty group", h.c.DeleteGroups(testCtx, []string{"g"})[0], nil)
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
	if groups, _ := h.c.ListGroups(ListFilter{}); len(groups) != 0 {
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
			req := TxnCommitRequest{ProducerID: producerID, CommitRequest: CommitRequest{Group: "g", Generation: -1, Topics: []CommitTopic{
				{Name: "events", Partitions: []CommitPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}},
			}}}
			wantErr(t, "txn offset commit", h.c.CommitTxnOffsets(testCtx, req)[0][0], nil)
		}
		stableFetch := func() (int64, error) {
			topics, err := h.c.FetchOffsets(FetchRequest{Group: "g", RequireStable: true, Topics: []FetchTopic{{Name: "events", Partitions: []int32{0}}}})
			if err != nil {
				t.Fatal(err)
			}
			return topics[0].Partitions[0].Offset, topics[0].Partitions[0].Err
		}
		txnCommit(100, 50)
		if got := h.fetched("g")[topicPartition{"events", 0}]; got != 5 {
			t.Fatalf("pending transactional offset visible: %d", got)
		}
		if _, err := stableFetch(); !errors.Is(err, ErrUnstableOffset) {
			t.Fatalf("require-stable fetch with a pending transaction: %v", err)
		}
		if err := h.c.CompleteTxn(testCtx, 100, 0, false); err != nil {
			t.Fatal(err)
		}
		if offset, err := stableFetch(); offset != 5 || err != nil {
			t.Fatalf("after abort: offset %d, %v", offset, err)
		}
		txnCommit(101, 60)
		h.restart()
		if got := h.fetched("g")[topicPartition{"events", 0}]; got != 5 {
			t.Fatalf("pending offset applied by the restart: %d", got)
		}
		if _, err := stableFetch(); !errors.Is(err, ErrUnstableOffset) {
			t.Fatalf("pending offset lost by the restart: %v", err)
		}
		if err := h.c.CompleteTxn(testCtx, 101, 0, true); err != nil {
			t.Fatal(err)
		}
		if offset, err := stableFetch(); offset != 60 || err != nil {
			t.Fatalf("after commit: offset %d, %v", offset, err)
		}
		h.restart()
		if got := h.fetched("g")[topicPartition{"events", 0}]; got != 60 {
			t.Fatalf("committed transactional offset after restart: %d", got)
		}
	})
}

// A failing store fails the commit (retriable) and leaves the previous
// offset.
func TestCommitStoreFailure(t *testing.T) {
	store := NewMemoryStore()
	h := newHarnessWith(t, func() OffsetStore { return store }, nil)
	h.simpleCommit("g", "events", map[int32]int64{0: 1})
	store.SetAppendError(errors.New("disk on fire"))
	errs := h.c.CommitOffsets(testCtx, CommitRequest{Group: "g", Generation: -1, Topics: []CommitTopic{
		{Name: "events", Partitions: []CommitPartition{{Partition: 0, Offset: 9}}},
	}})
	wantErr(t, "commit on a failing store", errs[0][0], ErrCoordinatorUnavailable)
	if got := h.fetched("g")[topicPartition{"events", 0}]; got != 1 {
		t.Fatalf("failed commit applied: %d", got)
	}
}
