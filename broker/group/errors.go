package group

import (
	"errors"
	"fmt"
)

// Sentinel errors of the coordinator. Every error the coordinator returns
// (or passes to a JoinGroup/SyncGroup reply) wraps exactly one of them
// with %w and some context; the broker maps them to Kafka error codes
// with errors.Is, in one table (package broker/errcode). The Kafka error
// each one stands for is named in its comment.
var (
	// ErrInvalidGroupID: the group id is empty (INVALID_GROUP_ID).
	ErrInvalidGroupID = errors.New("invalid group id")
	// ErrInvalidSessionTimeout: the session timeout is outside
	// [group.min.session.timeout.ms, group.max.session.timeout.ms]
	// (INVALID_SESSION_TIMEOUT).
	ErrInvalidSessionTimeout = errors.New("session timeout outside the broker's bounds")
	// ErrInvalidRebalanceTimeout: the rebalance timeout is negative
	// (INVALID_REQUEST).
	ErrInvalidRebalanceTimeout = errors.New("negative rebalance timeout")
	// ErrInconsistentProtocol: the member's protocol type or protocols do
	// not match the group's (INCONSISTENT_GROUP_PROTOCOL).
	ErrInconsistentProtocol = errors.New("inconsistent group protocol")
	// ErrNotCoordinator: the coordinator is closed (NOT_COORDINATOR);
	// clients look for the coordinator again.
	ErrNotCoordinator = errors.New("not the group's coordinator")
	// ErrCoordinatorLoadInProgress: the broker became the group's
	// coordinator and is still loading its __consumer_offsets partition
	// (COORDINATOR_LOAD_IN_PROGRESS); clients retry.
	ErrCoordinatorLoadInProgress = errors.New("group coordinator loading")
	// ErrUnknownMember: the member id is not in the group
	// (UNKNOWN_MEMBER_ID).
	ErrUnknownMember = errors.New("unknown member id")
	// ErrMemberIDRequired: a new member must rejoin with the member id it
	// was given (MEMBER_ID_REQUIRED, KIP-394).
	ErrMemberIDRequired = errors.New("member id required")
	// ErrFencedInstance: the group instance id now belongs to another
	// member id (FENCED_INSTANCE_ID, KIP-345).
	ErrFencedInstance = errors.New("group instance id owned by another member")
	// ErrRebalanceInProgress: the group is rebalancing; the member must
	// rejoin (REBALANCE_IN_PROGRESS).
	ErrRebalanceInProgress = errors.New("rebalance in progress")
	// ErrIllegalGeneration: the request's generation is not the group's
	// (ILLEGAL_GENERATION).
	ErrIllegalGeneration = errors.New("illegal generation")
	// ErrCoordinatorUnavailable: the offset store failed to append; the
	// client retries (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorUnavailable = errors.New("offset store append failed")
	// ErrGroupNotFound: no such group (GROUP_ID_NOT_FOUND).
	ErrGroupNotFound = errors.New("group not found")
	// ErrNonEmptyGroup: the group still has members (NON_EMPTY_GROUP).
	ErrNonEmptyGroup = errors.New("group has members")
	// ErrSubscribedTopic: the group's consumers subscribe to the topic
	// whose offsets are to be deleted (GROUP_SUBSCRIBED_TO_TOPIC).
	ErrSubscribedTopic = errors.New("group subscribed to topic")
	// ErrUnknownTopicID: a topic id that names no topic (UNKNOWN_TOPIC_ID).
	ErrUnknownTopicID = errors.New("unknown topic id")
	// ErrMetadataTooLarge: commit metadata longer than
	// offset.metadata.max.bytes (OFFSET_METADATA_TOO_LARGE).
	ErrMetadataTooLarge = errors.New("offset metadata too large")
	// ErrInvalidRequest: a ConsumerGroupHeartbeat whose fields contradict
	// each other or its member epoch (INVALID_REQUEST).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrFencedMemberEpoch: a consumer-protocol member's epoch is not the
	// one the coordinator knows; it must drop its partitions and rejoin
	// (FENCED_MEMBER_EPOCH).
	ErrFencedMemberEpoch = errors.New("member epoch fenced")
	// ErrStaleMemberEpoch: an offset commit or fetch carries a member epoch
	// that is not the member's current one (STALE_MEMBER_EPOCH).
	ErrStaleMemberEpoch = errors.New("stale member epoch")
	// ErrUnreleasedInstance: a static member joins with an instance id
	// another member still holds (UNRELEASED_INSTANCE_ID).
	ErrUnreleasedInstance = errors.New("group instance id still in use")
	// ErrUnsupportedAssignor: the member names a server assignor the
	// broker does not have (UNSUPPORTED_ASSIGNOR).
	ErrUnsupportedAssignor = errors.New("unsupported server assignor")
	// ErrInvalidRegex: the subscribed topic regular expression does not
	// compile (INVALID_REGULAR_EXPRESSION).
	ErrInvalidRegex = errors.New("invalid regular expression")
	// ErrUnsupportedVersion: a consumer-protocol member commits with
	// OffsetCommit older than v9 (UNSUPPORTED_VERSION).
	ErrUnsupportedVersion = errors.New("unsupported version")
	// ErrUnstableOffset: a transactional commit of the partition is pending
	// and the fetch requires stable offsets (UNSTABLE_OFFSET_COMMIT).
	ErrUnstableOffset = errors.New("pending transactional offset commit")
)

// groupError wraps a sentinel with the group it concerns.
func groupError(groupID string, sentinel error) error {
	return fmt.Errorf("group %q: %w", groupID, sentinel)
}

// memberError wraps a sentinel with the group and member it concerns.
func memberError(groupID, memberID string, sentinel error) error {
	return fmt.Errorf("group %q member %q: %w", groupID, memberID, sentinel)
}

// storeError is the error of a failed store append: retriable for the
// client (ErrCoordinatorUnavailable), with the store's failure as context.
func storeError(groupID string, err error) error {
	return fmt.Errorf("group %q: %w: %v", groupID, ErrCoordinatorUnavailable, err)
}

// Share group (KIP-932) state errors.
var (
	// ErrFencedLeaderEpoch: a share-partition state written by a leader of
	// an older epoch than the stored one (Kafka's FENCED_LEADER_EPOCH).
	ErrFencedLeaderEpoch = errors.New("share-partition state of an older leader epoch")
	// ErrFencedStateEpoch: a share-partition state written over another
	// state epoch, after AlterShareGroupOffsets reset it (Kafka's
	// FENCED_STATE_EPOCH).
	ErrFencedStateEpoch = errors.New("share-partition state epoch fenced")
)
