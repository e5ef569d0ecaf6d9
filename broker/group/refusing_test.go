package group

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRefusingCoordinator: a coordinator made by NewRefusingCoordinator
// answers every call with its sentinel — before any settings check (a
// join's session timeout is not looked at) — and never with success.
func TestRefusingCoordinator(t *testing.T) {
	for _, sentinel := range []error{ErrNotCoordinator, ErrCoordinatorLoadInProgress} {
		c := NewRefusingCoordinator(sentinel)
		ctx := context.Background()
		var joinErr error
		c.Join(ctx, JoinRequest{Group: "g", ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}},
			SessionTimeout: time.Hour * 1000}, func(_ JoinResult, err error) { joinErr = err })
		check := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, sentinel) {
				t.Errorf("%s: %v, want %v", what, err, sentinel)
			}
		}
		check("Join", joinErr)
		check("Heartbeat", c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "m", Generation: 1}))
		commit := c.CommitOffsets(ctx, CommitRequest{Group: "g", Generation: -1,
			Topics: []CommitTopic{{Name: "t", Partitions: []CommitPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}}}})
		check("CommitOffsets", commit[0][0])
		_, err := c.FetchOffsets(FetchRequest{Group: "g"})
		check("FetchOffsets", err)
		_, err = c.DescribeGroup("g")
		check("DescribeGroup", err)
		_, err = c.ListGroups(ListFilter{})
		check("ListGroups", err)
		check("DeleteGroups", c.DeleteGroups(ctx, []string{"g"})[0])
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}
