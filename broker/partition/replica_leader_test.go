package partition

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/wire"
)

// movingController answers AlterPartition like the controller completing
// a reassignment that removes the proposing leader: the proposed ISR is
// accepted and another replica leads.
type movingController struct {
	answer Role
	asked  [][]int32
}

func (c *movingController) AlterPartition(_ context.Context, _ string, _, _, _ int32, isr []int32) (Role, error) {
	c.asked = append(c.asked, slices.Clone(isr))
	return c.answer, nil
}

// TestLeaderRemovedByReassignmentAcknowledgesNothingTheNewLeaderLacks:
// a leader proposes an ISR with a new replica; the controller's answer
// completes a reassignment that makes the new replica leader and removes
// this one. Until the new role arrives this broker still leads; records
// appended then must not count as replicated (high watermark) before the
// new leader has them, or an acks=all producer would be told they are
// safe and lose them when the new leader takes over.
func TestLeaderRemovedByReassignmentAcknowledgesNothingTheNewLeaderLacks(t *testing.T) {
	t.Parallel()
	controller := &movingController{answer: Role{Leader: 3, LeaderEpoch: 1, PartitionEpoch: 2, Replicas: []int32{3, 2}, ISR: []int32{3, 2}}}
	p, err := Open(Config{Topic: "test", Index: 0, Dir: t.TempDir(), Fresh: true, Storage: storage.Options{},
		Logger:      slog.New(slog.DiscardHandler),
		Replication: &Replication{NodeID: 1, ISR: controller}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	// Replicas 3 and 2 are the target, 1 (this leader) is being removed.
	if err := p.BecomeLeader(&Role{Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1, Replicas: []int32{3, 2, 1}, ISR: []int32{2, 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendProduced(testBatch(t, wire.PlainBatchOptions(), 5), nil); err != nil {
		t.Fatal(err)
	}
	// Both followers catch up: 3 may join the ISR.
	p.RecordFollowerFetch(2, 5, 0)
	p.RecordFollowerFetch(3, 5, 0)
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d with every replica at 5", hw)
	}
	p.MaintainISR(context.Background(), time.Minute)
	if len(controller.asked) != 1 || !slices.Equal(controller.asked[0], []int32{2, 1, 3}) {
		t.Fatalf("proposed %v, want [2 1 3] once", controller.asked)
	}
	// The new role has not arrived: this broker still leads at epoch 0.
	if role := p.Role(); role.Leader != 1 {
		t.Fatalf("role %+v before the controller's role arrives", role)
	}
	if _, err := p.AppendProduced(testBatch(t, wire.PlainBatchOptions(), 5), nil); err != nil {
		t.Fatal(err)
	}
	p.RecordFollowerFetch(2, 10, 0) // the staying follower has them, the new leader 3 does not
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d: records the new leader 3 lacks count as replicated", hw)
	}
	// The role arrives: this broker follows, nothing more is acknowledged here.
	if _, err := p.BecomeFollower(&controller.answer); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckLeader(-1); err == nil {
		t.Fatal("still leading after the new role")
	}
}
