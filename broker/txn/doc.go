// Package txn is the transaction coordinator and its durable transaction
// log (seed §3.2.2, §4, §5; KIP-98, KIP-360, KIP-447, KIP-588, KIP-890).
//
// A transactional id maps to a producer id and epoch; the coordinator
// stores that mapping and the state of the id's transaction in a log
// (__transaction_state), fences older producer instances by bumping the
// epoch, records which partitions and consumer groups take part in a
// transaction, and ends it in two phases: PrepareCommit or PrepareAbort is
// written first — the outcome is then decided, without asking the
// participants (seed §5.1) — then a COMMIT or ABORT marker goes to every
// participant partition and the groups' offsets are completed, and finally
// CompleteCommit or CompleteAbort is written.
//
// It is a library: the broker's handlers (init_producer_id.go,
// add_partitions_to_txn.go, ...) call the entry points, which take kmsg
// requests and return kmsg responses with Kafka error codes. The broker
// supplies a Log (StorageLog over broker/storage), a PIDSource
// (*producers.IDAllocator), a MarkerWriter (its WriteTxnMarkers path) and
// an OffsetCommitter (the group coordinator's CompleteTxn).
//
// # States
//
// Kafka's states and its table of legal transitions (state.go,
// legalPrevious):
//
//	Empty             ← Empty, CompleteCommit, CompleteAbort
//	Ongoing           ← Ongoing, Empty, CompleteCommit, CompleteAbort
//	PrepareCommit     ← Ongoing
//	PrepareAbort      ← Ongoing, PrepareEpochFence
//	CompleteCommit    ← PrepareCommit
//	CompleteAbort     ← PrepareAbort
//	Dead              ← Empty, CompleteCommit, CompleteAbort
//	PrepareEpochFence ← Ongoing
//
// PrepareEpochFence exists only in memory: fencing an open transaction
// (a new instance's InitProducerId, or a timeout) computes Ongoing →
// PrepareEpochFence (epoch + 1) → PrepareAbort and writes only the last.
// Dead is the tombstone written when an id expires.
//
// # Ownership and locking
//
// Coordinator.mu guards the map of ids and the closed flag only. Each id
// has its own mutex (entry.mu), held from a request's decision until the
// new state is durable in the log and installed, so transitions of one id
// are serialized while ids proceed in parallel (Log.Append is called
// concurrently for different ids). Lock order: entry.mu, then
// Coordinator.mu; never the reverse. Readers that must not wait —
// DescribeTransactions, ListTransactions, VerifyPartition on the produce
// path — read an immutable copy published after each transition.
//
// Completion (markers, offsets, Complete*) runs on one goroutine per
// transaction in Prepare*, started when Prepare* is durable or found at
// load; it owns only its copy of the prepared state and takes entry.mu to
// write Complete*. No request moves an id out of Prepare*, so nothing
// races it; requests meanwhile get CONCURRENT_TRANSACTIONS. The timer loop
// (every Config.CleanupInterval) calls Tick, which takes each id's lock
// with TryLock (skipping busy ids until the next tick) to abort timed-out
// transactions and expire idle ids. Close stops both and waits for them.
//
// # When replies are sent
//
// Every state change is appended to the log before the request that
// caused it is answered; a failed append leaves the state unchanged and
// answers COORDINATOR_NOT_AVAILABLE (retriable). EndTxn answers once
// Prepare* is durable and the transaction completed, or Config.
// CompletionWait passed (the decision is durable either way; a negative
// CompletionWait answers right after Prepare*, as Kafka does).
// InitProducerId on an id with an open transaction fences and aborts it and
// waits for the abort to complete before bumping the epoch again (so the
// new instance gets epoch + 2), answering CONCURRENT_TRANSACTIONS if that
// takes longer than CompletionWait; the client retries.
//
// # Errors
//
//	INVALID_REQUEST (42)             empty transactional id or group; half-set KIP-360 id/epoch
//	INVALID_TRANSACTION_TIMEOUT (50) timeout not in (0, transaction.max.timeout.ms]
//	INVALID_PRODUCER_ID_MAPPING (49) unknown transactional id, or another producer id
//	PRODUCER_FENCED (90)             another epoch (a newer instance or a timeout bumped it);
//	                                 INVALID_PRODUCER_EPOCH (47) for InitProducerId < v4,
//	                                 AddPartitionsToTxn/AddOffsetsToTxn/EndTxn < v2, and Produce
//	CONCURRENT_TRANSACTIONS (51)     the previous transaction is still completing
//	INVALID_TXN_STATE (48)           EndTxn commit while PrepareAbort/CompleteAbort (and the
//	                                 reverse), EndTxn with nothing open, a partition not in the
//	                                 transaction (verification)
//	TRANSACTIONAL_ID_NOT_FOUND (105) DescribeTransactions of an unknown id
//	COORDINATOR_NOT_AVAILABLE (15)   the log append or producer id allocation failed
//	NOT_COORDINATOR (16)             the coordinator is closed
//
// The producer id and epoch are checked before the state, so a fenced
// producer gets the fencing error in every state, never a success and
// never a state error. EndTxn repeated after it completed, with the same
// epoch and decision, succeeds again without writing.
//
// # KIP-890
//
// Part 1 (server-side verification): VerifyPartition, and
// AddPartitionsToTxn v4+ with VerifyOnly, accept a transactional batch only
// if its producer id and epoch are current and its partition was added to
// the open transaction. Part 2 (transaction version 2) is behind
// Config.TransactionVersion2 and applies to EndTxn v5+: Prepare* bumps the
// epoch (a new producer id, NextProducerID, when it is exhausted), markers
// carry the bumped epoch, the response hands it to the producer, a retry
// with the previous epoch is recognized (LastProducerEpoch), and an abort
// with nothing open still bumps the epoch. The implicit add of a partition
// by a Produce v12+ is the broker sending AddPartitionsToTxn v5 (not
// VerifyOnly) here. TRANSACTION_ABORTABLE is not produced.
//
// # Transaction log records
//
// Kafka's __transaction_state formats; all integers big-endian. The key:
//
//	offset size field
//	0      2    key version, int16 = 0
//	2      2    transactional id length N, int16
//	4      N    transactional id, UTF-8
//
// The value, version 0 (Kafka 0.11–3.x; read, never written):
//
//	size  field
//	2     value version, int16 = 0
//	8     producer id, int64
//	2     producer epoch, int16
//	4     transaction timeout ms, int32
//	1     state, int8 (the State numbers: 0 Empty … 7 PrepareEpochFence)
//	4     topic count T, int32 (-1: null, read as none)
//	T ×   topic name (int16 length + UTF-8), partition count P int32, P × int32 partition
//	8     last update timestamp ms, int64
//	8     transaction start timestamp ms, int64 (-1: none open)
//
// Version 1 (KIP-915, flexible; what this package writes) has the same
// fields in the same order with compact encodings — arrays and strings
// carry their length + 1 as an unsigned varint, each topic entry ends with
// an empty tag buffer (one 0 byte) — and ends with a tag buffer: an
// unsigned varint count, then per tag an unsigned varint tag, an unsigned
// varint size, and the bytes. Tags, written only when not at the default:
//
//	tag    size  field
//	0      8     previous producer id, int64 (default -1)
//	1      8     next producer id, int64 (default -1; transaction version 2 rotation)
//	2      2     client transaction version, int16 (default 0)
//	10000  var   consumer groups of the transaction: compact array of compact strings
//	             (this broker's extension; Kafka ignores unknown tags)
//	10001  2     last producer epoch, int16 (this broker's extension; default -1)
//
// A value of null (a tombstone) deletes the id. Load keeps the latest value
// per key; a record that does not decode (ErrCorruptRecord) fails the load
// rather than be guessed at. Values in state PrepareEpochFence are never
// written and are refused on load. The groups extension exists because the
// partitions alone name a __consumer_offsets partition, not the group: a
// coordinator that reloads a Prepare* state must know which groups'
// offsets to complete. A version 0 value (from Kafka) has no groups; its
// __consumer_offsets partitions would then get no completion call.
//
// # StorageLog layout
//
// StorageLog keeps partition p of __transaction_state (50 by default,
// transaction.state.log.num.partitions) as a broker/storage log in
// <dir>/__transaction_state-<p>. Id x lives in partition PartitionFor(x, n)
// — Kafka's abs(javaStringHashCode(x)) % n. Each append is one record
// batch (magic 2, uncompressed, producer id -1, no transactional bit)
// holding one record whose key and value are the bytes above; Append
// returns after storage's WaitDurable (the fsync policy decides what that
// means). Recovery of a torn tail is storage's (see broker/storage).
//
// Not done: the log is not compacted — every transition stays, and Load
// replays all of it — and the coordinator serves every partition (no
// per-partition leadership or coordinator epoch changes; Config.
// CoordinatorEpoch is fixed for the process).
package txn
