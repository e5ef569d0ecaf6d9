package stages

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/pollwatch"
)

// AssignmentWatch follows how many input partitions each consume worker
// of a run holds, so the runner starts the load (and its clock) once the
// group has settled: without it, a consume stage's throughput would
// measure the group's first join (three seconds of
// group.initial.rebalance.delay on a Kafka-like broker) rather than the
// stage. Workers' callbacks (kgo's group goroutines, or a subprocess
// reader) call set; the runner waits. mu guards held.
type AssignmentWatch struct {
	mu      sync.Mutex
	held    []int
	changed chan struct{} // one pending wake-up
}

func NewAssignmentWatch(workers int) *AssignmentWatch {
	return &AssignmentWatch{held: make([]int, workers), changed: make(chan struct{}, 1)}
}

// Set notes that worker now holds count input partitions.
func (a *AssignmentWatch) Set(worker, count int) {
	a.mu.Lock()
	if worker >= 0 && worker < len(a.held) {
		a.held[worker] = count
	}
	a.mu.Unlock()
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// Settled reports whether every partition is held and, when there are
// enough partitions, every worker holds at least one (so no worker is
// still to join and trigger a rebalance).
func (a *AssignmentWatch) Settled(partitions int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	total := 0
	for _, count := range a.held {
		total += count
		if count == 0 && len(a.held) <= partitions {
			return false
		}
	}
	return total == partitions
}

// WaitSettled waits until Settled or deadline; it reports which.
func (a *AssignmentWatch) WaitSettled(ctx context.Context, partitions int, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for !a.Settled(partitions) {
		select {
		case <-a.changed:
		case <-timer.C:
			return a.Settled(partitions)
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// AssignmentOptions are the group callbacks that report, through report,
// how many partitions of topic the client holds, and every assignment
// change to the client's poll watch (package pollwatch), if it has one.
// For an auto-committing group (autoCommit) the revoke callback commits the marked offsets first,
// as kgo's default revoke callback, which these replace, would.
func AssignmentOptions(topic string, autoCommit bool, report func(count int)) []kgo.Opt {
	var mu sync.Mutex // guards held: kgo calls the callbacks one at a time, but from its own goroutines
	held := make(map[int32]bool)
	update := func(partitions map[string][]int32, add bool) {
		mu.Lock()
		for _, partition := range partitions[topic] {
			if add {
				held[partition] = true
			} else {
				delete(held, partition)
			}
		}
		count := len(held)
		mu.Unlock()
		if report != nil {
			report(count)
		}
	}
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, client *kgo.Client, assigned map[string][]int32) {
			pollwatch.Of(client).Assignment(assigned, true)
			update(assigned, true)
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, client *kgo.Client, revoked map[string][]int32) {
			if autoCommit {
				_ = client.CommitMarkedOffsets(ctx) // best effort, as kgo's default: a failure means redelivery, which the window absorbs
			}
			pollwatch.Of(client).Assignment(revoked, false)
			update(revoked, false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, client *kgo.Client, lost map[string][]int32) {
			pollwatch.Of(client).Assignment(lost, false)
			update(lost, false)
		}),
	}
}
