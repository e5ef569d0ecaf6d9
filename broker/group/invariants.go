package group

import "github.com/exactly-eos/exactly/internal/invariants"

// Run-time checks of a group's field invariants (the comments on group
// and member), compiled in only with the invariants build tag
// (internal/invariants). They run when an operation that changes members
// or state (Join, Sync, Heartbeat, Leave, Tick) releases the group's lock.

// unlock releases g.mu at the end of an operation, checking the group's
// invariants first in invariants builds.
func (g *group) unlock() {
	if invariants.Enabled {
		g.checkInvariants()
	}
	g.mu.Unlock()
}

// checkInvariants (caller holds g.mu): the leader is a member, or "" only
// when there are no members; order lists exactly the members; each static
// instance id maps to a member carrying it; an Empty group has no members;
// in CompletingRebalance and Stable every member joined the current
// generation and supports the selected protocol.
func (g *group) checkInvariants() {
	if g.state == stateDead {
		return // removed from the coordinator; never used again
	}
	_, leaderIsMember := g.members[g.leader]
	invariants.Check(leaderIsMember || (g.leader == "" && len(g.members) == 0),
		"group %s: leader %q with %d members", g.id, g.leader, len(g.members))
	invariants.Check(len(g.order) == len(g.members), "group %s: join order %v for %d members", g.id, g.order, len(g.members))
	for _, id := range g.order {
		_, ok := g.members[id]
		invariants.Check(ok, "group %s: %q in the join order is not a member", g.id, id)
	}
	for instanceID, memberID := range g.staticMembers {
		m, ok := g.members[memberID]
		invariants.Check(ok && m.instanceID != nil && *m.instanceID == instanceID,
			"group %s: static instance %q maps to %q, which is not a member with that instance id", g.id, instanceID, memberID)
	}
	invariants.Check(g.state != stateEmpty || len(g.members) == 0, "group %s: Empty with %d members", g.id, len(g.members))
	if g.state != stateCompletingRebalance && g.state != stateStable {
		return
	}
	for id, m := range g.members {
		invariants.Check(m.joinedGeneration == g.generation,
			"group %s (%v): member %s joined generation %d, the group is at %d", g.id, g.state, id, m.joinedGeneration, g.generation)
		invariants.Check(hasProtocol(m, g.protocol),
			"group %s (%v): member %s does not support the selected protocol %q", g.id, g.state, id, g.protocol)
	}
}
