package quorum

import "errors"

// Sentinel errors of the quorum. Every error a Node method returns for a
// rejected request wraps exactly one of these (test with errors.Is), also when
// the request was forwarded to the controller on another node: the RPC carries
// the sentinel's name and the receiving side wraps the same sentinel again.
// The broker maps them to Kafka error codes; the comment on each names the
// Kafka code it stands for.
var (
	// ErrNotController: the node that received a request is not the active
	// controller (not the raft leader, or it has not caught up yet). Node
	// methods retry on it internally until their context ends.
	// Kafka: NOT_CONTROLLER.
	ErrNotController = errors.New("quorum: not the active controller")
	// ErrClosed: the Node was closed.
	ErrClosed = errors.New("quorum: node closed")
	// ErrUnknownBroker: a heartbeat or fencing command names a broker id that
	// never registered. Kafka: BROKER_ID_NOT_REGISTERED.
	ErrUnknownBroker = errors.New("quorum: broker not registered")
	// ErrStaleBrokerEpoch: a heartbeat or fencing command carries a broker
	// epoch other than the broker's current registration.
	// Kafka: STALE_BROKER_EPOCH.
	ErrStaleBrokerEpoch = errors.New("quorum: stale broker epoch")
	// ErrProducerIDsExhausted: AllocateProducerIDs found no block left
	// below the largest int64. Kafka: UNKNOWN_SERVER_ERROR.
	ErrProducerIDsExhausted = errors.New("quorum: producer id space exhausted")
	// ErrTopicAlreadyExists: CreateTopic of an existing name.
	// Kafka: TOPIC_ALREADY_EXISTS.
	ErrTopicAlreadyExists = errors.New("quorum: topic already exists")
	// ErrUnknownTopicOrPartition: the topic or partition does not exist.
	// Kafka: UNKNOWN_TOPIC_OR_PARTITION.
	ErrUnknownTopicOrPartition = errors.New("quorum: unknown topic or partition")
	// ErrInvalidTopic: a topic name Kafka would not accept.
	// Kafka: INVALID_TOPIC_EXCEPTION.
	ErrInvalidTopic = errors.New("quorum: invalid topic name")
	// ErrInvalidPartitions: a partition count below 1, or CreatePartitions
	// that does not increase the count. Kafka: INVALID_PARTITIONS.
	ErrInvalidPartitions = errors.New("quorum: invalid partition count")
	// ErrInvalidReplicationFactor: a replication factor below 1 or above the
	// number of registered unfenced brokers. Kafka: INVALID_REPLICATION_FACTOR.
	ErrInvalidReplicationFactor = errors.New("quorum: invalid replication factor")
	// ErrFencedLeaderEpoch: AlterPartition with a leader epoch other than the
	// partition's current one. Kafka: FENCED_LEADER_EPOCH.
	ErrFencedLeaderEpoch = errors.New("quorum: fenced leader epoch")
	// ErrInvalidUpdateVersion: AlterPartition with a partition epoch other
	// than the partition's current one. Kafka: INVALID_UPDATE_VERSION.
	ErrInvalidUpdateVersion = errors.New("quorum: invalid partition epoch (update version)")
	// ErrIneligibleReplica: AlterPartition with an ISR that lacks the leader,
	// names a broker outside the assignment, a fenced broker or a duplicate.
	// Kafka: INELIGIBLE_REPLICA.
	ErrIneligibleReplica = errors.New("quorum: ineligible replica in ISR")
	// ErrInvalidRequest: a request with a malformed field (empty host, bad
	// port, negative id, zero topic id). Kafka: INVALID_REQUEST.
	ErrInvalidRequest = errors.New("quorum: invalid request")
	// ErrInvalidReplicaAssignment: a reassignment target that is empty,
	// names a broker twice or an unregistered broker, or a cancellation
	// that would leave no in-sync replica. Kafka: INVALID_REPLICA_ASSIGNMENT.
	ErrInvalidReplicaAssignment = errors.New("quorum: invalid replica assignment")
	// ErrNoReassignmentInProgress: cancelling the reassignment of a
	// partition that has none. Kafka: NO_REASSIGNMENT_IN_PROGRESS.
	ErrNoReassignmentInProgress = errors.New("quorum: no reassignment in progress")
	// ErrElectionNotNeeded: the partition already has the leader the
	// election would give it. Kafka: ELECTION_NOT_NEEDED.
	ErrElectionNotNeeded = errors.New("quorum: election not needed")
	// ErrPreferredLeaderNotAvailable: the preferred replica is fenced or
	// not in the ISR. Kafka: PREFERRED_LEADER_NOT_AVAILABLE.
	ErrPreferredLeaderNotAvailable = errors.New("quorum: preferred leader not available")
	// ErrEligibleLeadersNotAvailable: an unclean election found no live
	// replica. Kafka: ELIGIBLE_LEADERS_NOT_AVAILABLE.
	ErrEligibleLeadersNotAvailable = errors.New("quorum: no eligible leader available")
	// ErrMalformedCommand: a raft log entry that does not decode as a command
	// of a known version and type. It changes nothing in the state.
	ErrMalformedCommand = errors.New("quorum: malformed command")
)

// sentinels names every sentinel for the RPC: the forwarding side sends the
// name, the receiving side wraps the same sentinel again.
var sentinels = map[string]error{
	"not_controller":         ErrNotController,
	"closed":                 ErrClosed,
	"unknown_broker":         ErrUnknownBroker,
	"stale_broker_epoch":     ErrStaleBrokerEpoch,
	"producer_ids_exhausted": ErrProducerIDsExhausted,
	"topic_exists":           ErrTopicAlreadyExists,
	"unknown_topic":          ErrUnknownTopicOrPartition,
	"invalid_topic":          ErrInvalidTopic,
	"invalid_partitions":     ErrInvalidPartitions,
	"invalid_replication":    ErrInvalidReplicationFactor,
	"fenced_leader_epoch":    ErrFencedLeaderEpoch,
	"invalid_update_version": ErrInvalidUpdateVersion,
	"ineligible_replica":     ErrIneligibleReplica,
	"invalid_request":        ErrInvalidRequest,
	"malformed_command":      ErrMalformedCommand,
	"invalid_assignment":     ErrInvalidReplicaAssignment,
	"no_reassignment":        ErrNoReassignmentInProgress,
	"election_not_needed":    ErrElectionNotNeeded,
	"preferred_unavailable":  ErrPreferredLeaderNotAvailable,
	"no_eligible_leader":     ErrEligibleLeadersNotAvailable,
}

// sentinelName returns the RPC name of the sentinel err wraps, or "".
func sentinelName(err error) string {
	for name, s := range sentinels {
		if errors.Is(err, s) {
			return name
		}
	}
	return ""
}

// remoteError is an error received over the RPC: its text is the remote
// error's text, and it unwraps to the sentinel the remote error wrapped.
type remoteError struct {
	sentinel error
	msg      string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }
