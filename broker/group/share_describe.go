package group

import "slices"

// ShareGroupDescription is a share group as ShareGroupDescribe reports it.
type ShareGroupDescription struct {
	State string
	// Epoch is the group epoch; AssignmentEpoch the epoch the members'
	// assignment was computed at (the same: assignment follows the epoch).
	Epoch, AssignmentEpoch int32
	Assignor               string
	Members                []ShareMemberDescription
}

// ShareMemberDescription is one member of a described share group.
type ShareMemberDescription struct {
	MemberID   string
	RackID     *string
	Epoch      int32
	ClientID   string
	ClientHost string
	Subscribed []string
	Assigned   []TopicPartitions
}

// DescribeShareGroup describes a share group; an unknown group, or one
// that is not a share group, is ErrGroupNotFound.
func (c *Coordinator) DescribeShareGroup(groupID string) (ShareGroupDescription, error) {
	g := c.lockGroup(groupID, false)
	if g == nil {
		if c.isClosed() {
			return ShareGroupDescription{}, groupError(groupID, c.refusal())
		}
		return ShareGroupDescription{}, groupError(groupID, ErrGroupNotFound)
	}
	defer g.mu.Unlock()
	sg := g.share
	if sg == nil {
		return ShareGroupDescription{}, groupError(groupID, ErrGroupNotFound)
	}
	described := ShareGroupDescription{State: sg.state(), Epoch: sg.epoch, AssignmentEpoch: sg.epoch, Assignor: shareAssignorName}
	for _, id := range sg.sortedMemberIDs() {
		m := sg.members[id]
		described.Members = append(described.Members, ShareMemberDescription{
			MemberID: m.id, RackID: m.rackID, Epoch: m.epoch, ClientID: m.clientID, ClientHost: m.clientHost,
			Subscribed: slices.Clone(m.subscribed), Assigned: m.assigned.list(),
		})
	}
	return described, nil
}
