package broker

import "github.com/exactly-eos/exactly/broker/group"

// groupService is the broker as api.Groups, the service package api's handlers see.
type groupService struct{ b *Broker }

// For is [Broker.groupsFor].
func (s groupService) For(groupID string) *group.Coordinator { return s.b.groupsFor(groupID) }

// DuringShutdown is [Broker.duringShutdown].
func (s groupService) DuringShutdown(err error) error { return s.b.duringShutdown(err) }
