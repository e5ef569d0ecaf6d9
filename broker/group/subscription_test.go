package group

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// subscriptionTopics reads consumer protocol subscriptions of every
// version as kmsg does, and refuses exactly the truncations kmsg refuses.
func TestSubscriptionTopicsMatchesKmsg(t *testing.T) {
	rack := "rack-1"
	for version := int16(0); version <= 3; version++ {
		metadata := kmsg.NewConsumerMemberMetadata()
		metadata.Version = version
		metadata.Topics = []string{"events", "orders"}
		metadata.UserData = []byte("user")
		metadata.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "events", Partitions: []int32{0, 2}}}
		metadata.Generation = 4
		metadata.Rack = &rack
		encoded := metadata.AppendTo(nil)
		topics, err := subscriptionTopics(encoded)
		if err != nil || !slices.Equal(topics, metadata.Topics) {
			t.Fatalf("v%d: got %v, %v", version, topics, err)
		}
		for cut := range len(encoded) {
			var reference kmsg.ConsumerMemberMetadata
			want := reference.ReadFrom(encoded[:cut])
			if _, got := subscriptionTopics(encoded[:cut]); (got == nil) != (want == nil) {
				t.Fatalf("v%d cut at %d of %d: error %v, kmsg's %v", version, cut, len(encoded), got, want)
			}
		}
	}
}
