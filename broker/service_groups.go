package broker

import (
	"context"

	"github.com/exactly-eos/exactly/broker/group"
)

// groupService is the broker as api.Groups, the service package api's handlers see.
type groupService struct{ b *Broker }

// For is [Broker.groupsFor].
func (s groupService) For(groupID string) *group.Coordinator { return s.b.groupsFor(groupID) }

// DuringShutdown is [Broker.duringShutdown].
func (s groupService) DuringShutdown(err error) error { return s.b.duringShutdown(err) }

func (s groupService) ForReady(ctx context.Context, groupID string) *group.Coordinator {
	c := s.b.groupsFor(groupID)
	if c.Refusing() {
		wait, cancel := context.WithTimeout(ctx, coordinatorLoadWait)
		s.b.replication.groups.awaitLoaded(wait, s.b.offsetsPartition(groupID))
		cancel()
		c = s.b.groupsFor(groupID)
	}
	return c
}

// List is [Broker.listGroups].
func (s groupService) List(filter group.ListFilter) ([]group.GroupListing, error) {
	return s.b.listGroups(filter)
}

// Delete is [Broker.deleteGroups].
func (s groupService) Delete(ctx context.Context, groupIDs []string) []error {
	return s.b.deleteGroups(ctx, groupIDs)
}

// TopicName is the coordinators' [topicResolver.TopicName].
func (s groupService) TopicName(id [16]byte) (string, bool) { return topicResolver{s.b}.TopicName(id) }
