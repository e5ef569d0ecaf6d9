// Package txn is the transaction coordinator and its durable transaction
// log (KIP-98, KIP-360, KIP-447, KIP-588, KIP-890).
//
// A transactional id maps to a producer id and epoch; the coordinator
// stores that mapping and the state of the id's transaction in a log
// (__transaction_state), fences older producer instances by bumping the
// epoch, records which partitions and consumer groups take part in a
// transaction, and ends it in two phases: PrepareCommit or PrepareAbort is
// written first — the outcome is then decided, without asking the
// participants — then a COMMIT or ABORT marker goes to every participant
// partition and the groups' offsets are completed, and finally
// CompleteCommit or CompleteAbort is written.
//
// # Typed API
//
// It is a library that knows nothing of the Kafka protocol: the entry
// points take typed inputs ([InitRequest], [Producer], [EndRequest],
// [ListFilter], [TopicPartition]) and return typed results and errors —
// InitProducerID, AddPartitions, VerifyPartitions, AddOffsets, EndTxn,
// DescribeTransaction, ListTransactions, and for the broker's produce and
// TxnOffsetCommit paths VerifyPartition and AddProducedPartition (KIP-890's
// implicit add). The broker's per-API handlers (package broker/api: InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
// ListTransactions) decode Kafka requests
// into these types, applying each version's rules (which fields exist,
// whether EndTxn v5 runs transaction version 2), and encode the answers.
// The broker supplies a Log (StorageLog over broker/storage), a PIDSource
// (*producers.IDAllocator), a MarkerWriter (its WriteTxnMarkers path) and
// an OffsetCommitter (the group coordinator's CompleteTxn).
//
// # Sentinel errors
//
// Every error an entry point returns wraps one exported sentinel
// ([ErrProducerFenced], [ErrInvalidTxnState], ...) with context;
// per-partition answers (AddPartitions, VerifyPartitions) are one error per
// partition. The broker maps sentinels to Kafka error codes in its one
// error table (package broker/errcode, with its Txn), which also
// decides what depends on the request's version: a fenced producer is
// PRODUCER_FENCED from InitProducerId v4,
// AddPartitionsToTxn/AddOffsetsToTxn/EndTxn v2 and TxnOffsetCommit v3,
// INVALID_PRODUCER_EPOCH before and in every Produce version.
//
// # Deterministic core
//
// The coordinator starts no goroutine, sets no timer and reads the clock
// only through Config.Now; what needs a goroutine or a timer goes through
// its [Driver], so a test drives it step by step, as etcd raft's
// core is driven. Time moves by Tick(ctx, now), which aborts timed-out
// transactions and expires idle ids as of now. The second phase of a
// transaction is a Completion handed to Driver.Complete when Prepare* is
// durable (or found at load); each Completion.Step makes one attempt at
// what is left — the markers still missing, the groups still pending, then
// the Complete record — and reports done or the error. A request that
// waits for a completion (InitProducerId fencing an open transaction,
// EndTxn) waits through Driver.Await. The production driver,
// GoroutineDriver (the default), calls Tick every Config.CleanupInterval,
// steps each completion on its own goroutine with
// Config.MarkerRetryBackoff between failed attempts, and lets Await wait
// Config.CompletionWait; the step-by-step tests use a driver (stepDriver)
// that does nothing by itself.
//
// # States
//
// Kafka's states and its table of legal transitions ([State],
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
// concurrently for different ids). Lock order: Completion.mu, then
// entry.mu, then Coordinator.mu; never the reverse. Readers that must not
// wait — DescribeTransaction, ListTransactions, VerifyPartition(s) on the
// produce path — read an immutable copy published after each transition.
//
// A Completion owns only its copy of the prepared state and its lists of
// what is left; Step takes entry.mu only to write Complete*. No request
// moves an id out of Prepare*, so nothing races it; requests meanwhile get
// ErrConcurrentTransactions. Tick takes each id's lock with TryLock
// (skipping busy ids until the next tick). Close refuses new requests and
// stops the driver, which returns once no Tick or Step of its own runs;
// a Step after Close fails with ErrCoordinatorClosed.
//
// # When replies are sent
//
// Every state change is appended to the log before the request that
// caused it is answered; a failed append leaves the state unchanged and
// answers ErrCoordinatorNotAvailable (retriable). EndTxn answers once
// Prepare* is durable and the transaction completed, or Driver.Await gave
// up (the decision is durable either way; with a negative
// Config.CompletionWait the production driver answers right after
// Prepare*, as Kafka does). InitProducerId on an id with an open
// transaction fences and aborts it and waits for the abort to complete
// before bumping the epoch again (so the new instance gets epoch + 2),
// answering ErrConcurrentTransactions if Await gives up first; the client
// retries.
//
// # Errors
//
//	ErrInvalidRequest            empty transactional id or group; half-set KIP-360 id/epoch
//	ErrInvalidTransactionTimeout timeout not in (0, transaction.max.timeout.ms]
//	ErrInvalidProducerIDMapping  unknown transactional id, or another producer id
//	ErrProducerFenced            another epoch (a newer instance or a timeout bumped it)
//	ErrConcurrentTransactions    the previous transaction is still completing
//	ErrInvalidTxnState           EndTxn commit while PrepareAbort/CompleteAbort (and the
//	                             reverse), EndTxn with nothing open, a partition not in the
//	                             transaction (verification)
//	ErrUnknownPartition          Config.PartitionExists says no (the request's other
//	                             partitions get ErrOperationNotAttempted)
//	ErrTransactionalIDNotFound   DescribeTransaction of an unknown id
//	ErrInvalidRegularExpression  ListTransactions' pattern does not compile
//	ErrCoordinatorNotAvailable   the log append or producer id allocation failed
//	ErrCoordinatorClosed         the coordinator is closed
//
// The producer id and epoch are checked before the state, so a fenced
// producer gets the fencing error in every state, never a success and
// never a state error. EndTxn repeated after it completed, with the same
// epoch and decision, succeeds again without writing.
//
// # KIP-890
//
// Part 1 (server-side verification): VerifyPartition and VerifyPartitions
// (AddPartitionsToTxn v4+ with VerifyOnly) accept a transactional batch
// only if its producer id and epoch are current and its partition was
// added to the open transaction. Part 2 (transaction version 2) is
// EndRequest.TransactionVersion2, which the broker sets for EndTxn v5+ at
// transaction.version 2: Prepare* bumps the epoch (a new producer id,
// NextProducerID, when it is exhausted), markers carry the bumped epoch,
// the result hands it to the producer, a retry with the previous epoch is
// recognized (LastProducerEpoch), and an abort with nothing open still
// bumps the epoch. The implicit add of a partition by a Produce v12+ is
// AddProducedPartition, of a group by a TxnOffsetCommit v5+ AddOffsets.
// TRANSACTION_ABORTABLE is not produced.
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
// encodeValue and decodeValue encode and decode these by hand over wire's
// primitives; the tests check the bytes against franz-go's generated codec
// for Kafka's schema. A value of null (a tombstone) deletes the id. Load
// keeps the latest value per key; a record that does not decode
// (ErrCorruptRecord) fails the load rather than be guessed at. Values in
// state PrepareEpochFence are never written and are refused on load. The
// groups extension exists because the partitions alone name a
// __consumer_offsets partition, not the group: a coordinator that reloads a
// Prepare* state must know which groups' offsets to complete. A version 0
// value (from Kafka) has no groups; its __consumer_offsets partitions would
// then get no completion call.
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
// The broker compacts the topic (cleanup.policy=compact, its log cleaner):
// Load reads what is left — the latest record of each id, tombstones until
// log.cleaner.delete.retention.ms, with gaps between offsets — and the
// latest record of an id is all it needs. A coordinator serves every id of
// its Log and has one Config.CoordinatorEpoch: a broker (a cluster of one
// included) runs one per __transaction_state partition it leads, over that
// replicated partition, at its leader epoch (LoadPartitionLog,
// EncodeLogBatch), and answers the ids of other partitions through
// NewRefusingCoordinator. StorageLog, a Log over local partitions, serves
// this package's tests.
package txn
