package group

import "fmt"

// Offsets of consumer-protocol groups are validated against member epochs
// (Kafka's ConsumerGroup.validateOffsetCommit and validateOffsetFetch).
// TxnOffsetCommit goes through the same check, so a member fenced or
// removed from the group can no longer stage offsets in a transaction.

// validateConsumerCommit checks an OffsetCommit or TxnOffsetCommit to a
// consumer group: a commit without a member epoch (-1) is allowed only
// while the group has no members; otherwise the member must exist
// (UNKNOWN_MEMBER_ID), use OffsetCommit v9+ for plain commits
// (UNSUPPORTED_VERSION), and carry its current member epoch
// (STALE_MEMBER_EPOCH).
func (g *group) validateConsumerCommit(epoch int32, memberID string, legacyVersion bool) error {
	cg := g.consumer
	if epoch < 0 && len(cg.members) == 0 {
		return nil
	}
	m, ok := cg.members[memberID]
	switch {
	case !ok:
		return memberError(g.id, memberID, ErrUnknownMember)
	case legacyVersion:
		return memberError(g.id, memberID, fmt.Errorf("%w: members of consumer-protocol groups commit with OffsetCommit v9 or later", ErrUnsupportedVersion))
	case epoch != m.memberEpoch:
		return memberError(g.id, memberID, fmt.Errorf("%w: epoch %d, the member's is %d", ErrStaleMemberEpoch, epoch, m.memberEpoch))
	}
	return nil
}

// validateConsumerFetch checks an OffsetFetch's member (v9+) when the group
// is a consumer group; a fetch without a member id is always allowed, and
// classic groups ignore the member (as Kafka).
func (g *group) validateConsumerFetch(memberID *string, epoch int32) error {
	cg := g.consumer
	if cg == nil || memberID == nil {
		return nil
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m, ok := cg.members[id]
	switch {
	case !ok:
		return memberError(g.id, id, ErrUnknownMember)
	case epoch != m.memberEpoch:
		return memberError(g.id, id, fmt.Errorf("%w: epoch %d, the member's is %d", ErrStaleMemberEpoch, epoch, m.memberEpoch))
	}
	return nil
}
