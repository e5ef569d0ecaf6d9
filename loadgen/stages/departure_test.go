package stages

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// A departure lets a worker commit afterCommits polls, then asks it to
// abort the next; once its phase ends it aborts whatever comes next.
func TestDepartureCommitsThenLeaves(t *testing.T) {
	var left []int
	leave := make(chan struct{})
	d := &Departure{AfterCommits: 2, Leave: leave, OnLeft: func(records, commits int) { left = append(left, records, commits) }}
	for range 2 {
		if !d.commitNext() {
			t.Fatalf("after %d commits the worker must still commit", d.commits)
		}
		d.committed(nil)
	}
	if d.commitNext() {
		t.Fatal("after 2 commits the worker must abort its next poll")
	}
	d.aborted(7)
	if !slices.Equal(left, []int{7, 2}) {
		t.Fatalf("left reported %v, want 7 records after 2 commits", left)
	}
	stays := &Departure{AfterCommits: -1, Leave: leave}
	if !stays.commitNext() || stays.requested() {
		t.Fatal("a worker that stays commits until its phase ends")
	}
	close(leave)
	if stays.commitNext() || !stays.requested() {
		t.Fatal("once its phase ended a worker aborts and leaves")
	}
	var none *Departure // no churn: always commit, never leave
	if !none.commitNext() || none.requested() {
		t.Fatal("a nil departure must commit and stay")
	}
}

// The identity counter counts each load record once, however often the
// stage commits it, and ignores values without a loadgen header.
func TestIdentityCounterCountsDistinctRecords(t *testing.T) {
	counter := NewIdentityCounter(NewCounter())
	record := func(producer uint32, seq uint64) *kgo.Record {
		return &kgo.Record{Value: verify.NewValue(verify.Header{RunID: 1, Producer: producer, Sequence: seq, Stage: 1}, 64)}
	}
	poll := func(records ...*kgo.Record) kgo.Fetches {
		return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: []kgo.FetchPartition{{Records: records}}}}}}
	}
	counter.Commit(poll(record(0, 1), record(0, 2), record(1, 1)))
	counter.Commit(poll(record(0, 2), record(1, 1), record(1, 2), &kgo.Record{Value: []byte("not a loadgen record")}))
	if got := counter.counter.Load(); got != 4 {
		t.Fatalf("counted %d, want 4 distinct records", got)
	}
}
