// Package group is the consumer group coordinator — the classic protocol
// (JoinGroup/SyncGroup) and the consumer protocol of KIP-848
// (ConsumerGroupHeartbeat; consumerGroup and the comment above its states
// have its epochs, states and ownership invariant) — the share groups'
// coordinator (KIP-932: ShareHeartbeat, and the durable share-partition
// state partition leaders write and read, WriteShareState and
// ReadShareState) and the committed-offset store of the broker.
//
// # API
//
// The coordinator is protocol-neutral: its methods take typed inputs
// ([JoinRequest], [SyncRequest], [CommitRequest], [FetchRequest], ...) and
// return typed results and errors; it imports no Kafka protocol package.
// The broker's per-API handlers (package broker/api: joinGroup, ...) decode each
// request, apply its version's defaults, call the coordinator and encode
// the answer for the response's version. The calls: Join, Sync, Heartbeat,
// Leave, CommitOffsets, FetchOffsets, DeleteOffsets, CommitTxnOffsets,
// DescribeGroup, ListGroups and DeleteGroups. PartitionFor maps a group to
// its __consumer_offsets partition (for FindCoordinator and for the store).
// CompleteTxn is for the transaction coordinator: it ends a producer's
// transaction in every group holding its TxnOffsetCommit offsets. Member
// ids start with the joining client's id (JoinRequest.Client), and
// DescribeGroup reports each member's client id and host.
//
// # Errors
//
// Every refusal is an error wrapping one of the exported sentinels
// ([ErrUnknownMember], [ErrIllegalGeneration], ...) with context. The broker
// maps them to Kafka error codes in its one error table
// (package broker/errcode); each sentinel's comment names its Kafka error.
// Per-partition outcomes (commits, fetches, offset deletes) and per-member
// ones (leaves) are slices of errors indexed like the request.
//
// # Ownership and time
//
// The coordinator is a deterministic core: it runs no goroutine, reads
// time only from Config.Now, and its timers (session timeouts, KIP-394
// pending members, group.initial.rebalance.delay, rebalance timeouts,
// offset retention) are deadlines stored in the groups and fired by
// Tick(now). A thin driver, StartTicker, calls Tick every TickInterval in
// the broker; tests call it after moving a fake clock, and so drive
// rebalances and expiries step by step. Join and Sync do not block: a
// request that must wait for a rebalance step is parked with the
// JoinReply/SyncReply callback its caller passed, and is answered exactly
// once from the call (request, Tick or Close) that completes the step. The
// broker owns the waiting: its callback fills a one-slot channel it waits
// on, so answering never blocks the coordinator.
//
// Each group has one mutex that serializes every operation on it
// (requests, Tick, and the store append that persists an operation, so
// the log order is the order of operations); replies are called under it.
// The Coordinator's own mutex guards only the group map, the transaction
// index and closed; lock order is group before coordinator. Tick takes
// each group's mutex in turn. Close answers every parked request with
// ErrNotCoordinator.
//
// # State machine
//
// Empty → PreparingRebalance (a member joins) → CompletingRebalance (every
// expected member joined, or the rebalance timeout passed: the generation
// advances, a protocol is selected, the leader gets the member list) →
// Stable (the leader's SyncGroup arrives with the assignment, which is
// persisted). A join that changes anything, a leave, or an expired session
// goes back to PreparingRebalance; when no member is left the group is
// Empty again (generation advanced). Dead: deleted or expired; a Dead group
// has left the map and is never reused.
//
// # __consumer_offsets record formats
//
// Store records use Kafka's own key and value schemas, so the log is the
// same as Kafka's. All integers are big-endian; string is int16 length +
// UTF-8 bytes; nullable string uses length -1 for null; bytes is int32
// length + bytes. A record with a null value is a tombstone: it deletes
// its key.
//
// Offset commit key (version 1; version 0 has the same layout):
//
//	int16  version = 1
//	string group
//	string topic
//	int32  partition
//
// Offset commit value (version 3; version 1 is also read, its expire
// timestamp ignored):
//
//	int16  version = 3
//	int64  offset
//	int32  leader epoch (-1: unknown)
//	string metadata
//	int64  commit timestamp (ms)
//
// Group metadata key (version 2):
//
//	int16  version = 2
//	string group
//
// Group metadata value (version 3):
//
//	int16           version = 3
//	string          protocol type
//	int32           generation
//	nullable string protocol
//	nullable string leader
//	int64           current state timestamp (ms)
//	int32           member count, then per member:
//	  string          member id
//	  nullable string group instance id
//	  string          client id
//	  string          client host
//	  int32           rebalance timeout (ms)
//	  int32           session timeout (ms)
//	  bytes           subscription (metadata of the selected protocol)
//	  bytes           assignment
//
// Group metadata is written when a generation becomes Stable (the leader's
// assignment), when a static member is replaced without a rebalance, and
// when the group becomes Empty; a tombstone when it is deleted or expires.
//
// Consumer group (KIP-848) records. Keys: int16 version (the record type)
// then string group, and for the per-member ones string member id:
// 3 group epoch, 4 subscription metadata (read and ignored; not written),
// 5 member metadata, 6 target assignment epoch, 7 member target
// assignment, 8 member current assignment. Values are Kafka's flexible
// version 0: int16 version = 0, then fields with compact strings
// (uvarint length+1, 0 = null) and compact arrays (uvarint count+1), and
// an empty tagged-field section (one 0 byte) at the end of every struct:
//
//	3: int32 epoch
//	5: nullable instance id, nullable rack id, client id, client host,
//	   [string] subscribed topics, nullable regex, int32 rebalance
//	   timeout (ms), nullable server assignor
//	6: int32 assignment epoch
//	7: [topic partitions] target
//	8: int32 member epoch, int32 previous epoch, int8 state,
//	   [topic partitions] assigned, [topic partitions] pending revocation
//	topic partitions: uuid topic id (16 bytes), [int32] partitions, tags
//
// Each ConsumerGroupHeartbeat that changes something appends its records
// as one batch; a removed member's records get tombstones (8, 7, 5), a
// deleted or reconverted group's (6, 4, 3). A classic group converted to
// a consumer group gets a group metadata tombstone.
//
// Share group (KIP-932) records. Key 11 (Kafka's ShareGroupMetadata key:
// int16 11, string group) holds the share group's epoch, value flexible
// version 0: int16 0, int32 epoch, tags. Key 100 (no counterpart in
// Kafka's __consumer_offsets; Kafka keeps share-partition state in
// __share_group_state): int16 100, string group, uuid topic id (16
// bytes), int32 partition; its value is the share-partition's state as
// its leader last wrote it:
//
//	int16 version = 0
//	int32 state epoch
//	int32 leader epoch
//	int64 start offset
//	int32 batch count, then per batch:
//	  int64 first offset
//	  int64 last offset
//	  int16 delivery count
//	  int8  state (0 available, 2 acknowledged, 4 archived)
//
// A share group's deletion writes tombstones for both; share group
// members are not persisted (they rejoin after the coordinator moves).
//
// # Batches and transactions
//
// The LogStore writes each StoreBatch as one record batch v2 (magic 2,
// uncompressed, CRC-32C) to partition PartitionFor(group) of
// __consumer_offsets, in dir/__consumer_offsets-<n>, through broker/storage.
// Plain commits: producer id -1. TxnOffsetCommit offsets: a transactional
// batch (attribute bit 4) carrying the producer id and epoch. CompleteTxn
// appends a control batch (bits 4 and 5) holding one transaction marker:
// key = int16 version 0, int16 type (0 abort, 1 commit); value = int16
// version 0, int32 coordinator epoch.
//
// A broker of a cluster runs one Coordinator per __consumer_offsets
// partition it leads, over that replicated partition (its own OffsetStore
// built on EncodeStoreBatch and ReplayLog), and answers the groups of
// other partitions through NewRefusingCoordinator (ErrNotCoordinator,
// ErrCoordinatorLoadInProgress).
//
// # Recovery
//
// On NewCoordinator the store is replayed partition by partition in log
// order: the latest value per key wins, tombstones delete, transactional
// offsets are held per producer id until that producer's marker on the
// same partition (commit applies them, abort drops them); offsets still
// pending at the end stay pending, so a later CompleteTxn applies them. A
// committed transactional offset replaces a plain one only if it was
// appended later. Groups with members come back Stable in their persisted
// generation with fresh session deadlines; the others come back Empty. A
// record that does not decode fails the load with an error (the storage
// layer has already truncated a torn tail).
package group
