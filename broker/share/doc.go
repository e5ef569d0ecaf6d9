// Package share keeps the share-partition state of KIP-932 (share groups,
// "queues for Kafka"): for one share group on one topic partition, which
// records are in flight, who holds them, and how often each was delivered.
//
// The package is a pure library: no network, no goroutines, no Kafka
// protocol types, no clock (the methods that need the time take it as
// now). It is deterministic and not safe for concurrent use: the broker,
// as the partition leader, holds one mutex per share-partition around
// every call.
//
// # Window
//
// A [Partition] is a window of records [SPSO, SPEO): the share-partition
// start offset ([Partition.StartOffset]) and end offset
// ([Partition.EndOffset]). Every offset below SPSO is done (Acknowledged
// or Archived); offsets at or after SPEO were never acquired (implicitly
// Available with delivery count 0). Each record of the window has a
// [RecordState], a delivery count and, while Acquired, the member holding
// its acquisition lock and the lock's deadline. SPSO moves past leading
// done records as soon as they appear, so the record at SPSO is never
// done; the window's memory below SPSO is dropped.
//
// # States and transitions
//
//	Available --Acquire (count+1, lock until now+LockDuration)--> Acquired
//	Available --reached in a Skip batch (or the gap before one)--> Archived
//	Acquired  --AckAccept--> Acknowledged
//	Acquired  --AckReject, AckGap--> Archived
//	Acquired  --AckRelease, lock expiry (ExpireLocks)--> Available,
//	          or Archived when the delivery count reached DeliveryLimit
//	Acquired  --ReleaseMember (count-1)--> Available
//	Acquired  --AckRenew--> Acquired (deadline now+LockDuration)
//
// Acknowledged and Archived are final. [Partition.AdvanceStart] drops
// records below a new log start whatever their state, [Partition.Reset]
// forgets the whole window. [Partition.Acquire] has the rules for batches,
// gaps, limits and caps; [Partition.Acknowledge] the rules for refusals.
//
// # Errors
//
// Refusals wrap one sentinel each: [ErrInvalidRecordState] (Kafka
// INVALID_RECORD_STATE), [ErrInvalidRequest] (INVALID_REQUEST) and
// [ErrInvalidSnapshot] (corrupt durable state).
//
// # Snapshot format
//
// [Snapshot] is the durable form; acquisitions are not durable (an
// Acquired record is written as Available with its delivery count).
// [Snapshot.MarshalBinary] writes it big-endian, fixed-width, as:
//
//	version        int16   = 1 (SnapshotVersion)
//	start offset   int64   SPSO
//	end offset     int64   SPEO
//	leader epoch   int32
//	state epoch    int32
//	batch count    int32   (unsigned; n)
//	n batches, each 19 bytes:
//	  first offset   int64
//	  last offset    int64
//	  delivery count int16
//	  state          int8  (0 Available, 2 Acknowledged, 4 Archived)
//
// The header is 30 bytes; the encoding is exactly 30+19n bytes (no
// trailing bytes). [Snapshot.UnmarshalBinary] checks the encoding (length,
// version, a count the input can hold) and [Restore] the contents: the
// batches are maximal runs of equal (state, delivery count) that cover
// [SPSO, SPEO) exactly, in order, none Acquired, the first not done, and
// the window at most [MaxWindow] records. So a snapshot that restores
// marshals back to the same bytes.
package share
