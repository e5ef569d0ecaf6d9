// Package quorum is the metadata quorum of the replicated cluster: a raft
// group, one node per broker process, whose replicated state machine holds
// the cluster's metadata — the registered brokers (with their epoch and
// fenced flag), the topics (name, 16-byte id, configs) and, per partition,
// the replica assignment, ISR, leader, leader epoch and partition epoch;
// and the next producer id to hand out. It is the counterpart of Kafka's
// KRaft controller quorum in combined mode.
// It does not import package broker; broker's glue converts Broker and
// Partition into its ClusterBroker and PartitionRole (same field names).
//
// # Why hashicorp/raft
//
// The quorum is built on github.com/hashicorp/raft with raft-boltdb as log
// and stable store, raft's file snapshot store and its network transport
// over TCP (streamLayer: a small stream layer that binds RaftBind,
// advertises the Voters entry and dials from SourceAddress).
// hashicorp/raft drives its own goroutines, storage and transport: the
// package supplies a raft.FSM and gets elections, log replication,
// snapshots, membership changes and non-voters. go.etcd.io/raft is a
// deterministic core (Step, Tick, Ready) for which we would write and test
// the transport, the durable log and the snapshot plumbing ourselves —
// more code that can be wrong, for a metadata log that sees a few commands
// per second. (raft-boltdb/v2 is at v2.3.0: v2.3.1 imports
// go-metrics/compat, which the go-metrics that raft v1.8.0 needs no
// longer has.)
//
// # How it works
//
// [Node] (made by [Open]) opens the stores in Config.DataDir, starts raft
// and, on the first start of an empty data dir, bootstraps the raft
// configuration with the three lowest node ids of Config.Voters as voters
// (KRaft-style combined mode: with 3 brokers all vote, with more, 3 do).
// Every other node starts with an empty configuration and asks the leader
// over the RPC to add it as a non-voter (raft AddNonvoter); it then
// receives the log like the voters. A restart finds the state on disk and
// skips bootstrap.
//
// Every node applies the committed log to the state machine (fsm,
// applyCommand), a pure transition function over an immutable [Image]: a
// command builds the next image by copying what it changes and publishes it
// with an atomic pointer swap, then closes the previous image's Changed
// channel. Readers call Node.Image without taking a lock and wait on
// Changed (or use Node.WaitFor) to learn of changes. Commands (envelope,
// encodeCommand) are versioned JSON envelopes; every check that depends on
// the state — topic exists, replication factor versus unfenced brokers,
// AlterPartition's epochs — is made in the state machine when the entry is
// applied, so it is atomic with the state and every node reaches the same
// result. A rejected or malformed command changes nothing. Snapshots
// (fsmSnapshot, snapshotFile) are the image as versioned JSON.
//
// Requests (RegisterBroker, Heartbeat, CreateTopic, DeleteTopic,
// CreatePartitions, AlterPartition, SetTopicConfigs, SetGroupConfigs) may
// be made on any node: a node that
// is not the raft leader forwards them to the leader's RPC address over a
// small length-prefixed JSON protocol of its own (rpcRequest, rpcResponse,
// callRPC), retrying while the leadership moves, bounded by the caller's
// context. After a write, the calling node waits until its own image holds
// the effect.
//
// AllocateProducerIDs is such a request too (Kafka's AllocateProducerIds,
// KIP-730; producer_ids.go): a broker of the current broker epoch gets
// the next block of 1000 producer ids, and next moves past it in the same
// log entry, so no two brokers, and no broker twice, get one id, across
// controller failovers, restarts and snapshots. The request carries the
// broker's floor, which covers the ids it handed out from its own
// producer-ids file before the blocks came from the quorum.
//
// The raft leader is the active controller (controller.run). It keeps each
// broker's last heartbeat in memory — reset to now for every broker when a
// node becomes leader, so a new controller does not fence everybody at
// once — and fences a broker silent for Config.SessionTimeout with a
// command: the broker leaves every ISR that has another member, and each
// partition it led elects the first replica in assignment order that is in
// the ISR and unfenced (leader epoch and partition epoch +1), or gets
// leader -1 with the ISR keeping its last member (unclean leader election
// is off: a replica outside the ISR never becomes leader). A fenced broker
// that heartbeats or registers again is unfenced, and a leaderless
// partition whose ISR holds it elects it.
//
// # A cluster of one
//
// A single broker runs the same quorum with one voter: itself, listed with
// no addresses (Config.Voters = {id: {}}). That node's raft runs over
// hashicorp/raft's in-memory transport and it serves no RPC, since no
// other node exists to call it or to be called; it elects itself within
// one short election timeout (50ms unless set) and applies every command
// as the leader, through the same state machine, log and snapshots as a
// member of three.
//
// # Goroutines
//
// hashicorp/raft runs its own (leader loop, FSM, snapshots, transport); it
// calls the FSM from one goroutine. A Node adds: the RPC server's accept
// loop and one goroutine per connection, the controller loop, a non-voter's
// join loop, and one loop per StartHeartbeats. Close ends all of them.
//
// Errors: every rejection wraps one of the exported sentinels
// ([ErrNotController], [ErrUnknownBroker], ...), also across the forwarding
// RPC, so the broker can map them to Kafka error codes.
package quorum
