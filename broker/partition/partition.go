package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/exactly-eos/exactly/broker/producers"
	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/wire"
)

// UnreplicatedLeaderEpoch is the partition leader epoch of every partition
// without a role (replication off): it is led here from the start and the
// epoch never changes. A replicated partition's epoch is its role's.
const UnreplicatedLeaderEpoch int32 = 0

// Config is what [Open] needs from the broker to open a partition.
type Config struct {
	// Topic and Index name the partition ("<topic>-<index>" in logs and
	// errors).
	Topic string
	Index int32
	// Dir is the partition's directory.
	Dir string
	// Fresh: the partition is new (a created topic or partition); Open
	// first removes whatever Dir holds, so that a stale directory of a
	// deleted topic with the same name does not resurface as the new
	// topic's data, and logs no "partition loaded" line.
	Fresh bool
	// Storage configures the log; its FS is the one every file of the
	// partition is reached through.
	Storage storage.Options
	// Producers configures the idempotent-producer state (expiration age,
	// the snapshots' FS).
	Producers producers.Options
	// Logger receives the partition's log lines.
	Logger *slog.Logger
	// Replication, when not nil, makes the partition a replica whose role
	// the controller decides ([Partition.BecomeLeader],
	// [Partition.BecomeFollower]); nil when replication is off.
	Replication *Replication
}

// Replication is what a replicated partition needs from its broker.
type Replication struct {
	// NodeID is this broker's id, to tell whether a role makes it leader.
	NodeID int32
	// ISR is how the leader asks the controller to change the ISR
	// ([Partition.MaintainISR]).
	ISR ISRChanger
	// FollowerCaughtUp, if set, is called (without locks) when a
	// follower's fetch may let it rejoin the ISR, so that the broker's
	// ISR maintenance looks now; it must not block.
	FollowerCaughtUp func()
	// ISRChanged, if set, is told of every change of the ISR of a
	// partition led here, whoever made it (this leader's
	// [Partition.MaintainISR], or the controller fencing a follower), for
	// the shrink and expand counts. Called without locks.
	ISRChanged func(before, after []int32)
	// CheckpointedHighWatermark is the partition's high watermark in the
	// broker's checkpoint ([ReadHighWatermarkCheckpoint]); 0 when it has
	// none. Open caps it by the recovered log.
	CheckpointedHighWatermark int64
}

// Partition is one topic partition: its log, its idempotent-producer
// state, its transactions' state, its replication role and high
// watermark, and the notification that wakes long-polling fetches.
// Every append goes through [Partition.Append]; the package doc has the
// goroutines that touch it and its lock order.
type Partition struct {
	topic  string
	index  int32
	log    *storage.Log
	logger *slog.Logger
	// replication is [Config.Replication]; nil when replication is off.
	replication *Replication
	// producerOptions configure producers (expiration age); set at open.
	producerOptions producers.Options

	// appendMu serialises appends: storage.Log allows one appender at a
	// time, and connections append from their own reader goroutines. It
	// also guards the transition of closed to true, so no append runs on a
	// closed log, and the producer state below (see Partition.applyProducerBatchLocked).
	appendMu sync.Mutex
	// producers is the idempotent-producer state up to the log end
	// (guarded by appendMu). Invariant: it reflects every batch in the log
	// that was appended or replayed, in log order.
	producers *producers.PartitionState
	// producersDirty: producers changed since the last snapshot (appendMu).
	producersDirty bool
	// snapshotOffset is the offset of the newest snapshot prepared (see
	// pendingSnapshot) or loaded, -1 if none (appendMu).
	snapshotOffset int64
	// pendingSnapshot is a snapshot prepared under appendMu, written by
	// unlockAppend after appendMu is released (appendMu).
	pendingSnapshot *pendingSnapshot
	// snapshotMu serializes snapshot file writes with close, delete and
	// truncate, which take it before appendMu (lock order: snapshotMu,
	// then appendMu). It is held across a snapshot's disk I/O; appends
	// never take it.
	snapshotMu sync.Mutex
	// snapshotGeneration counts truncations (bumped under snapshotMu and
	// appendMu); a snapshot prepared in an older generation is dropped.
	snapshotGeneration atomic.Uint64
	// unwrittenSnapshots counts snapshots released by unlockAppend and
	// not yet written or dropped; close writes its own when any is left.
	unwrittenSnapshots atomic.Int64
	// activeSegmentBase is the base offset of the segment the last append
	// went to, -1 when not known yet; a change means the append rolled a
	// segment (appendMu).
	activeSegmentBase int64
	// abortIndexBehind is set when an ABORT marker was appended but its
	// aborted-index entry could not be written; snapshots stop so that a
	// restart replays the marker and restores the entry (appendMu).
	abortIndexBehind bool
	// unstableOffset is the first offset of the oldest open transaction on
	// the partition, -1 when none is open (appendMu). Invariant: it is
	// producers.FirstUnstableOffset().
	unstableOffset int64
	// lastStable is the last stable offset: unstableOffset when a
	// transaction is open, else the log end. Written under appendMu after
	// every append and marker, read without locks by read_committed
	// fetches and ListOffsets; never above the log end at any instant.
	lastStable atomic.Int64
	// verifications holds, per producer id, the guard of a KIP-890
	// verification in progress or done for the producer's open transaction
	// (appendMu). A marker for the producer removes it, so a batch whose
	// verification raced with the end of its transaction finds its guard
	// gone and is refused instead of opening a hanging transaction.
	verifications map[int64]*verificationGuard
	// closed is set (under appendMu) when the log is closed or deleted;
	// readers check it to report UNKNOWN_TOPIC_OR_PARTITION.
	closed atomic.Bool

	// notifyMu guards notify: a channel closed and replaced after every
	// append, so any number of fetches can wait for new data without
	// polling. A waiter takes the channel before reading the log, so an
	// append between its read and its wait still wakes it.
	notifyMu sync.Mutex
	notify   chan struct{}

	// Replication ([Partition.BecomeLeader], [Partition.AppendReplicated]); unused when
	// the partition was opened without [Config.Replication].

	// nodeID is this broker's id, to tell whether a role makes it leader.
	nodeID int32
	// role is the partition's role as last applied. Nil when replication
	// is off: then it is led here at [UnreplicatedLeaderEpoch] and the high watermark is
	// the log end. With replication on it starts as "no leader known"
	// (leader -1, epoch -1) until the controller's role arrives. Replaced
	// under appendMu and replicaMu; read without locks.
	role atomic.Pointer[Role]
	// epochs is the leader-epoch checkpoint (leaderEpochCache); nil when
	// replication is off (appendMu).
	epochs *leaderEpochCache
	// hw is the high watermark of a partition with a role. Invariants:
	// hw <= the log end at every instant (a truncation lowers hw first);
	// on the leader it is the minimum log end over the leader and the
	// (maximal) ISR, and never decreases while it leads.
	hw atomic.Int64
	// replicaMu guards the leader's view of its followers below (lock
	// order: after appendMu, before notifyMu); never held across I/O.
	replicaMu sync.Mutex
	// followers is, on the leader, each other replica's fetch state.
	followers map[int32]*followerState
	// pendingISR is an ISR proposed to the controller and not yet
	// answered; the high watermark counts its members too (KIP-497's
	// maximal ISR), so a replica being added is not missing a record
	// acknowledged before its addition committed.
	pendingISR []int32
	// isrInFlight: an AlterPartition for this partition is in flight.
	isrInFlight bool
	// leaderEpochStart is the first offset of the current leader epoch
	// (set when becoming leader); a follower joins the ISR only once it
	// fetched past it.
	leaderEpochStart int64
}

// Open opens (or with [Config.Fresh], first wipes and creates) the log of
// a partition and rebuilds its state: the producer state from its newest
// snapshot and a replay, the last stable offset, and with
// [Config.Replication] the high watermark and leader epochs from their
// checkpoints, with no role yet.
func Open(config Config) (*Partition, error) {
	dir := config.Dir
	fsys := config.Storage.FS
	if fsys == nil {
		fsys = storage.OSFS{}
	}
	if config.Fresh {
		// A stale directory of a deleted topic with the same name must not
		// resurface as the new topic's data.
		if err := fsys.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("%w: clear %s: %w", ErrStorage, dir, err)
		}
	}
	log, report, err := storage.Open(dir, config.Storage)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", ErrStorage, dir, err)
	}
	p := &Partition{topic: config.Topic, index: config.Index, log: log, logger: config.Logger, producerOptions: config.Producers,
		activeSegmentBase: -1, notify: make(chan struct{}), verifications: map[int64]*verificationGuard{}}
	replayed, err := p.loadProducerState(p.producerOptions)
	if err != nil {
		log.Close()
		return nil, err
	}
	p.refreshUnstable()
	if config.Replication != nil {
		// Until the controller's role arrives nobody is known to lead:
		// the partition takes no produce and serves no fetch (a
		// restarted replica must not append on its own). Epoch -1 makes
		// any real role newer.
		p.role.Store(&Role{Leader: -1, LeaderEpoch: -1, PartitionEpoch: -1})
		p.replication = config.Replication
		p.nodeID = config.Replication.NodeID
		if err = p.loadHighWatermark(fsys, dir, config.Replication.CheckpointedHighWatermark); err == nil {
			p.epochs, err = openLeaderEpochCache(fsys, dir)
		}
		if err == nil {
			// A crash can lose an unsynced log tail the checkpoint already
			// names: drop the epochs starting beyond the recovered end.
			err = p.epochs.truncateFromEnd(log.LogEndOffset() + 1)
		}
		if err != nil {
			log.Close()
			return nil, fmt.Errorf("%w: %s: %w", ErrStorage, p.Name(), err)
		}
	}
	if !config.Fresh {
		p.logger.Info("partition loaded", "partition", p.Name(),
			"log_start_offset", log.LogStartOffset(), "log_end_offset", log.LogEndOffset(),
			"recovery", fmt.Sprintf("%+v", report), "producers", p.producers.Len(),
			"producer_snapshot_offset", p.snapshotOffset, "replayed_batches", replayed)
	}
	return p, nil
}

// Name is "<topic>-<index>", for logs and errors.
func (p *Partition) Name() string { return p.topic + "-" + strconv.Itoa(int(p.index)) }

// Topic is the name of the partition's topic.
func (p *Partition) Topic() string { return p.topic }

// Index is the partition's index in its topic.
func (p *Partition) Index() int32 { return p.index }

// Log is the partition's log, which fetches, ListOffsets, the log cleaner
// and metrics read directly (storage.Log is safe for concurrent use);
// every append goes through [Partition.Append] instead.
func (p *Partition) Log() *storage.Log { return p.log }

// Closed reports whether the partition was closed or deleted; readers
// report UNKNOWN_TOPIC_OR_PARTITION then.
func (p *Partition) Closed() bool { return p.closed.Load() }

// Replicated reports whether the partition has a role (replication on):
// then its high watermark is what the ISR has, and acks=all waits for
// [Partition.WaitReplicated].
func (p *Partition) Replicated() bool { return p.role.Load() != nil }

func (p *Partition) wakeWaiters() {
	p.notifyMu.Lock()
	close(p.notify)
	p.notify = make(chan struct{})
	p.notifyMu.Unlock()
}

// WaitChannel returns the channel the next append closes.
func (p *Partition) WaitChannel() <-chan struct{} {
	p.notifyMu.Lock()
	defer p.notifyMu.Unlock()
	return p.notify
}

// WaitDurable waits until offset is durable under the log's fsync policy.
func (p *Partition) WaitDurable(ctx context.Context, offset int64) error {
	if err := p.log.WaitDurable(ctx, offset); err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("%w: %s: %w", ErrShuttingDown, p.Name(), err)
		}
		return fmt.Errorf("%w: sync %s: %w", ErrStorage, p.Name(), err)
	}
	return nil
}

// HighWatermark is the offset after the last readable record. Without a
// role (one replica) every appended record is committed, so it is the log
// end; with one it is what the ISR has ([Partition.WaitReplicated]).
func (p *Partition) HighWatermark() int64 {
	if p.role.Load() == nil {
		return p.log.LogEndOffset()
	}
	return p.hw.Load()
}

// ApplyRetention deletes segments beyond the topic's retention. The
// producer state is kept (producers expire by idleness, not by retention);
// when segments went, a snapshot at the log end keeps the producers whose
// batches were all deleted across a restart. The files are removed
// without appendMu (storage serializes retention with appends itself and
// unlinks outside its append lock); appendMu is taken only to prepare the
// snapshot, written after it is released.
func (p *Partition) ApplyRetention() (int, error) {
	if p.closed.Load() {
		return 0, nil
	}
	deleted, err := p.log.ApplyRetention()
	if errors.Is(err, storage.ErrClosed) && p.closed.Load() {
		return 0, nil
	}
	if deleted > 0 {
		p.appendMu.Lock()
		if !p.closed.Load() {
			p.snapshotLocked(p.log.LogEndOffset())
		}
		p.unlockAppend()
	}
	return deleted, err
}

// Reconfigure applies a topic's new configuration to the log. Settings the
// broker checks itself (max.message.bytes, min.insync.replicas,
// message.timestamp.type) take effect through the topic's config snapshot.
func (p *Partition) Reconfigure(options storage.Options) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.closed.Load() {
		return nil
	}
	return p.log.SetOptions(options)
}

// Close flushes and closes the log (after a snapshot of the producer state
// and a high-watermark checkpoint).
func (p *Partition) Close() error {
	p.snapshotMu.Lock()
	defer p.snapshotMu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.closed.Swap(true) {
		return nil
	}
	p.wakeWaiters()
	// A snapshot at the log end makes the next start replay nothing. One
	// prepared but not written yet will be dropped (the partition is
	// closed): write this one even if it has the same offset.
	if p.unwrittenSnapshots.Load() > 0 {
		p.producersDirty = true
	}
	p.snapshotLocked(p.log.LogEndOffset())
	p.writeSnapshotNowLocked()
	if err := p.log.Close(); err != nil {
		return fmt.Errorf("close %s: %w", p.Name(), err)
	}
	return nil
}

// Delete closes the log and removes its files.
func (p *Partition) Delete() error {
	p.snapshotMu.Lock()
	defer p.snapshotMu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.closed.Store(true)
	p.wakeWaiters()
	if err := p.log.Delete(); err != nil {
		return fmt.Errorf("delete %s: %w", p.Name(), err)
	}
	return nil
}

// MaxTimestampOffset scans the batch headers for the largest timestamp
// (ListOffsets' MAX_TIMESTAMP): its batch's last offset and the
// timestamp, -1 and -1 in an empty log.
func (p *Partition) MaxTimestampOffset() (offset, timestamp int64, err error) {
	offset, timestamp = -1, -1
	err = p.log.ScanHeaders(p.log.LogStartOffset(), func(batch wire.BatchView) error {
		if batch.MaxTimestamp() > timestamp {
			offset, timestamp = batch.LastOffset(), batch.MaxTimestamp()
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("%w: scan %s: %w", ErrStorage, p.Name(), err)
	}
	return offset, timestamp, nil
}

// CleanBounds captures, under appendMu, what the log cleaner may not go
// past: the partition's last stable offset (never above its high
// watermark) and each producer's newest batch.
func (p *Partition) CleanBounds() (int64, map[int64]int64, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.closed.Load() {
		return 0, nil, storage.ErrClosed
	}
	return p.LastStableOffset(), p.producers.LastBatchOffsets(), nil
}
