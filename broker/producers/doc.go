// Package producers is the idempotent-producer state of a partition
// (KIP-98): per producer id, its epoch and the metadata of its 5 newest
// batches, so that a retried batch is answered with its original offsets
// instead of being written twice, a gap in sequence numbers is refused, and a
// fenced (older-epoch) producer cannot write. It also allocates producer ids.
//
// It is a pure library: no network, no wire parsing. The caller extracts a
// Batch from a record batch header.
//
// # Ownership
//
// A PartitionState belongs to its partition and is not safe for concurrent
// use. Under the partition's append lock the owner calls Check, appends the
// batch if the verdict says so, then calls Update with the assigned offsets,
// without releasing the lock in between. IDAllocator and FileBlockReserver
// are safe for concurrent use (one mutex each).
//
// # Rules (Kafka's ProducerStateManager semantics)
//
// See PartitionState.Check. Error mapping for the broker:
//
//	ErrOutOfOrderSequence   → OUT_OF_ORDER_SEQUENCE_NUMBER (45)
//	ErrInvalidProducerEpoch → INVALID_PRODUCER_EPOCH (47); PRODUCER_FENCED (90) where the version has it
//	ErrUnknownProducerID    → UNKNOWN_PRODUCER_ID (59)
//	ErrInvalidBatch         → INVALID_RECORD (87)
//	ErrCoordinatorFenced    → TRANSACTION_COORDINATOR_FENCED (52)
//
// Decisions where Kafka has changed over time or leaves room:
//
//   - Unknown producer with a non-zero first sequence: rejected with
//     ErrUnknownProducerID. Kafka before 2.5 did the same; KIP-360 (2.5)
//     made brokers accept any first sequence, because brokers then dropped
//     a producer's state once retention deleted all its batches, and the
//     client could not continue. Here state is never dropped when the log
//     start moves (see below), so that reason does not apply, while
//     accepting loses data silently: two requests in flight to a new
//     leader or a new partition, the first fails retriably, the second is
//     accepted, and every retry of the first is then out of order
//     (KAFKA-15591; Kafka 4.5 went back to rejecting, with
//     OUT_OF_ORDER_SEQUENCE_NUMBER, on never-written partitions). franz-go
//     handles UNKNOWN_PRODUCER_ID like OUT_OF_ORDER_SEQUENCE_NUMBER
//     (kgo's sink.handleReqRespBatch): it bumps the epoch when the log
//     start moved past its last acknowledged offset, and otherwise reports
//     possible data loss and resets its producer id and sequences. The
//     broker may map this error to either code; it only happens after a
//     producer expired or lost state.
//   - A retry older than the 5-batch window (only a client with more than 5
//     requests in flight can send one) is ErrOutOfOrderSequence, as in
//     current Kafka; DUPLICATE_SEQUENCE_NUMBER is not used because the
//     original offsets are no longer known.
//   - A new epoch must start at sequence 0; the old epoch's cached batches
//     are forgotten, so a retry from the old epoch is fenced.
//
// # Retention and truncation
//
// When the log start offset moves (retention, DeleteRecords), producer state
// is kept until the producer expires (ExpireIdle, producer.id.expiration.ms,
// default 1 day), as Kafka has done since KIP-360: a producer whose batches
// were all deleted can still continue its sequence. A producer with an open
// transaction never expires here.
//
// When the log is truncated to offset T (a follower adopting a new leader's
// log), state cannot be undone in memory, since batches older than the 5 are
// not kept. The owner rebuilds instead:
//
//	RemoveSnapshotsAbove(dir, T, options)
//	state, load, err := LoadLatestSnapshot(dir, T, options)
//	// scan batch headers from max(load.Offset, log start) to T: Replay each
//	// data batch, ApplyMarker each control batch.
//
// The same sequence runs at startup with T = the log end. For the replay to
// stay short and for snapshots to survive retention, the owner writes a
// snapshot when it rolls a segment (at the new segment's base offset) and
// before deleting segments; the newest two are kept.
//
// # Snapshot file format (version 1)
//
// File name: the snapshot offset in 20 decimal digits, then ".snapshot"
// (00000000000000001234.snapshot). The state reflects every batch below the
// offset and none at or above it. All integers are big-endian; signed ones
// are two's complement.
//
// Header, 24 bytes:
//
//	offset size field
//	0      4    magic "XPRS" (0x58 0x50 0x52 0x53)
//	4      2    version, uint16 = 1
//	6      2    reserved, 0
//	8      4    crc32c (Castagnoli) of every byte from offset 12 to the end of the file
//	12     8    snapshot offset, int64 (must equal the offset in the file name)
//	20     4    producer count N, uint32
//
// Then N producer entries in increasing producer id order, each 32 bytes
// plus 32 per batch:
//
//	offset size field
//	0      8    producer id, int64 >= 0 (strictly increasing through the file)
//	8      2    producer epoch, int16 >= 0
//	10     1    batch count B, 0..5
//	11     1    reserved, 0
//	12     4    coordinator epoch, int32 (-1: no marker seen)
//	16     8    last update time, int64 Unix ms, broker clock (the first expiry sweep
//	            or snapshot after the producer's newest batch)
//	24     8    current transaction first offset, int64 (-1: none open)
//	32     32*B batches, oldest first:
//	            0  4 first sequence, int32 >= 0
//	            4  4 last sequence, int32 >= 0
//	            8  8 first offset, int64 >= 0
//	            16 8 last offset, int64 >= first offset
//	            24 8 max timestamp, int64
//
// The file ends exactly after the last entry. Writing is atomic: the bytes go
// to "<name>.tmp", which is fsynced, renamed to the final name, and the
// directory fsynced; a crash leaves at most a stray ".tmp" file, which the
// next WriteSnapshot deletes. On load, a file that fails any check above
// (short, bad magic or version, CRC mismatch, a field out of range or a
// reserved byte not 0, producer ids not increasing, trailing
// bytes, offset differing from its name) is skipped with the reason and the
// next older snapshot is tried; with none left the state starts empty and the
// whole log is replayed. A newer format version is skipped the same way.
//
// # Producer ids
//
// IDAllocator hands out ids from blocks reserved through a BlockReserver;
// in a broker that is the metadata quorum's controller, and the broker
// only reads a FileBlockReserver's file, left by an earlier version, for
// the ids it handed out from it. FileBlockReserver keeps one 16-byte
// file, big-endian:
//
//	offset size field
//	0      4    magic "XPID" (0x58 0x50 0x49 0x44)
//	4      4    crc32c (Castagnoli) of bytes 8..15
//	8      8    end, int64 >= 0: every id below it has been reserved
//
// A reservation writes the new end with the same atomic sequence as a
// snapshot (temporary file, fsync, rename, directory fsync) before any id of
// the new block is handed out. After a crash the rest of the current block
// is skipped, never reused. A missing file starts at id 0; a corrupt file
// (wrong size, magic or CRC) is an error, never a reset, since a reset would
// reuse ids.
package producers
