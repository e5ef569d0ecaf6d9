package partition

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
)

// DeleteRecords (Kafka's DeleteRecords API) moves a partition's log start
// offset forward: records below it are no longer readable (a fetch below
// it is OFFSET_OUT_OF_RANGE) and the segments wholly below it are deleted.
// The leader moves first ([Partition.DeleteRecordsBefore]); each follower
// follows the leader's log start offset from its fetch answers
// ([Partition.LearnLogStartOffset]), never past its own high watermark.

// ErrOffsetOutOfRange: DeleteRecords asked for an offset below -1 or above
// the high watermark (storage's error, one Kafka code).
var ErrOffsetOutOfRange = storage.ErrOffsetOutOfRange

// DeleteRecordsBefore moves the log start offset of a partition led here
// to offset (-1: the high watermark), which must not be above the high
// watermark (ErrOffsetOutOfRange), and returns the log start offset after
// it (unchanged when it was already at or past offset). Like retention, it
// keeps the producer state and snapshots it at the log end when segments
// went.
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	if p.closed.Load() {
		return -1, fmt.Errorf("%w: %s was deleted", ErrUnknownTopicOrPartition, p.Name())
	}
	if role := p.role.Load(); role != nil && role.Leader != p.nodeID {
		return -1, fmt.Errorf("%w: %s is led by %d", ErrNotLeader, p.Name(), role.Leader)
	}
	highWatermark := p.HighWatermark()
	if offset == -1 {
		offset = highWatermark
	}
	if offset < 0 || offset > highWatermark {
		return -1, fmt.Errorf("%w: delete records of %s before %d (high watermark %d)", ErrOffsetOutOfRange, p.Name(), offset, highWatermark)
	}
	if err := p.moveLogStart(offset); err != nil {
		return -1, err
	}
	return p.log.LogStartOffset(), nil
}

// WaitLowWatermark waits, on the leader, until every ISR member's log
// start offset has reached offset (the followers report theirs in their
// fetches), as Kafka's DeleteRecords does before it answers, and returns
// the low watermark then: the smallest log start offset over the ISR. It
// gives up with ErrRequestTimedOut after timeout, and ends early when ctx
// (the connection's) or stop (the broker's) ends.
func (p *Partition) WaitLowWatermark(ctx context.Context, stop <-chan struct{}, offset int64, timeout time.Duration) (int64, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		wake := p.WaitChannel()
		low, err := p.lowWatermark()
		if err != nil || low >= offset {
			return low, err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return -1, fmt.Errorf("%w: %s: %w", ErrShuttingDown, p.Name(), ctx.Err())
		case <-stop:
			return -1, fmt.Errorf("%w: %s", ErrShuttingDown, p.Name())
		case <-timer.C:
			return -1, fmt.Errorf("%w: %s: the ISR's log start offsets did not reach %d within %v (low watermark %d)", ErrRequestTimedOut, p.Name(), offset, timeout, low)
		}
	}
}

// lowWatermark is the smallest log start offset over the ISR (the
// leader's own when it leads alone or is unreplicated).
func (p *Partition) lowWatermark() (int64, error) {
	low := p.log.LogStartOffset()
	role := p.role.Load()
	if role == nil {
		return low, nil
	}
	if role.Leader != p.nodeID {
		return -1, fmt.Errorf("%w: %s: leadership moved to broker %d", ErrNotLeader, p.Name(), role.Leader)
	}
	p.replicaMu.Lock()
	defer p.replicaMu.Unlock()
	for _, id := range role.ISR {
		if follower := p.followers[id]; id != p.nodeID && follower != nil {
			low = min(low, follower.logStart)
		}
	}
	return low, nil
}

// LearnLogStartOffset is a follower's side of DeleteRecords: the leader's
// log start offset from a fetch answer moves this replica's, up to its
// high watermark (what it holds of the leader's log). A lower or equal one
// changes nothing.
func (p *Partition) LearnLogStartOffset(leaderLogStart int64) error {
	if p.closed.Load() || leaderLogStart <= p.log.LogStartOffset() {
		return nil
	}
	target := min(leaderLogStart, p.HighWatermark())
	if target <= p.log.LogStartOffset() {
		return nil
	}
	return p.moveLogStart(target)
}

// moveLogStart moves the log start to offset and, when segments went,
// snapshots the producer state at the log end (as ApplyRetention does).
func (p *Partition) moveLogStart(offset int64) error {
	before := p.log.LogStartOffset()
	if err := p.log.DeleteRecordsBefore(offset); err != nil {
		if errors.Is(err, ErrOffsetOutOfRange) {
			return err
		}
		return fmt.Errorf("%w: delete records of %s: %w", ErrStorage, p.Name(), err)
	}
	if p.log.LogStartOffset() > before {
		p.appendMu.Lock()
		if !p.closed.Load() {
			p.snapshotLocked(p.log.LogEndOffset())
		}
		p.unlockAppend()
	}
	return nil
}
