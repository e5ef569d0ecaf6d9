// Package partition is one topic partition of the broker: [Partition]
// owns its [storage.Log], its idempotent-producer state
// (producers.PartitionState, snapshots in <partition-dir>/producer-snapshots),
// its transactions' state (open transactions, the last stable offset, the
// KIP-890 verification guards, the aborted-transaction index entries of
// its ABORT markers), and, with replication, its role (leader or follower,
// [Role]), high watermark and its checkpoint, leader-epoch cache and
// checkpoint, and the leader's view of its followers.
//
// # One append path
//
// Every batch that enters the log goes through [Partition.Append] with an
// [Origin] — a client's Produce ([Partition.AppendClient],
// [Partition.AppendProduced]), a follower's fetched batches
// ([Partition.AppendReplicated]), a coordinator's batch on an internal
// partition ([Partition.AppendCoordinatorBatch]) and a transaction marker
// ([Partition.AppendMarker]) — after one pass over the batch headers,
// [Analyze], into an [AppendInfo] that every later step reads.
//
// # What the broker provides
//
// The partition does not know the broker. What it needs comes in through
// [Config] (its name, directory, storage and producer options, logger) and
// [Replication] (this broker's node id, the controller's [ISRChanger], a
// callback asking the broker's ISR loop to look); a transactional batch's
// verification goes through a [TxnVerifier] the caller passes to
// [Partition.AppendClient]. Its errors are this package's sentinels
// ([ErrNotLeader], [ErrStorage], ...), the broker maps them to Kafka
// error codes in its one table, and those of producers, storage and wire
// pass through.
//
// # Goroutines
//
// A Partition starts no goroutine. It is called by the broker's:
// connection readers (Produce appends, so one connection's batches reach
// the partition in arrival order; KIP-890 verifications run there too,
// with no partition lock held), fetch handlers and their long polls
// ([Partition.WaitChannel], lock-free reads of the log, the high watermark
// and the last stable offset), the acks=all waiters
// ([Partition.WaitDurable], [Partition.WaitReplicated]), the transaction
// coordinator's marker goroutines ([Partition.AppendMarker]), the group and
// transaction coordinators' shards ([Partition.AppendCoordinatorBatch]), a
// replica fetcher goroutine per leader ([Partition.AppendReplicated],
// [Partition.TruncateAsFollower], [Partition.LearnHighWatermark]), the ISR
// maintenance goroutine ([Partition.MaintainISR]), the role changes
// ([Partition.BecomeLeader], [Partition.BecomeFollower]), and the
// retention, producer-expiry, high-watermark checkpoint and log-cleaner
// goroutines ([Partition.ApplyRetention], [Partition.ExpireProducers],
// [Partition.CleanBounds]).
//
// # Lock order
//
// Outermost first; a goroutine holding one may take only those below it.
// In the broker's global order (see package broker's doc) these come
// after the coordinators' locks and before the log's own.
//
//  1. Partition.snapshotMu: producer snapshot file writes, and close,
//     delete and truncate, which take it before appendMu. I/O: the
//     snapshot (temporary file, fsync, rename, directory fsync).
//  2. Partition.appendMu: appends of every origin ([Partition.Append]
//     runs Partition.appendLocked under it), markers, the producer state,
//     the verification guards, the role change, and a follower's
//     truncation (with snapshotMu). I/O: the storage append and what
//     storage still does under its own append lock; the aborted-index
//     entry of an ABORT marker; the leader-epoch checkpoint rewrite (once
//     per leader change and per truncation). Not producer snapshots
//     (encoded under it, written after it by Partition.unlockAppend), not
//     retention's file removal, not KIP-890 verification (done before
//     taking it).
//  3. Partition.replicaMu: the leader's follower positions
//     (Partition.followers) and its pending ISR; never held across I/O
//     (the ISR proposal waits for the controller without it).
//  4. Partition.notifyMu: a leaf guarding the channel appends close to
//     wake fetches.
//
// Below all of them come [storage.Log]'s locks. (The high-watermark
// checkpoint is the broker's, one file for all partitions: it reads each
// partition's [Partition.HighWatermark] without a partition lock.)
//
// The invariants of the fields (comments on [Partition]'s fields) are
// checked after every append and marker in builds with the invariants tag
// (Partition.assertInvariantsLocked).
package partition
