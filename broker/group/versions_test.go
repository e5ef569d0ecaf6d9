package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every handler answers every version it serves with a response of that
// version, which kmsg encodes and decodes back to the same bytes.
func TestResponsesEncodeAtEveryVersion(t *testing.T) {
	h := newHarness(t, nil)
	h.simpleCommit("offsets", "events", map[int32]int64{0: 1})
	metadata := "m"
	type call struct {
		name     string
		versions [2]int16
		run      func(version int16) kmsg.Response
	}
	calls := []call{
		{"JoinGroup", [2]int16{0, 9}, func(v int16) kmsg.Response {
			return await(t, h.joinAsync(newJoin(v, "join-"+string(rune('a'+v)), "")), "join")
		}},
		{"SyncGroup", [2]int16{0, 5}, func(v int16) kmsg.Response { return h.c.SyncGroup(testCtx, newSync(v, "none", "m", 1, nil)) }},
		{"Heartbeat", [2]int16{0, 4}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Version, req.Group, req.MemberID = v, "none", "m"
			return h.c.Heartbeat(testCtx, req)
		}},
		{"LeaveGroup", [2]int16{0, 5}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Version, req.Group, req.MemberID = v, "none", "m"
			req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
			return h.c.LeaveGroup(testCtx, req)
		}},
		{"OffsetCommit", [2]int16{0, 9}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Version, req.Group = v, "offsets"
			req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "events", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 2, Metadata: &metadata}}}}
			return h.c.OffsetCommit(testCtx, req)
		}},
		{"OffsetFetch", [2]int16{0, 9}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version, req.Group = v, "offsets"
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "events", Partitions: []int32{0}}}
			req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "offsets"}}
			return h.c.OffsetFetch(testCtx, req)
		}},
		{"DescribeGroups", [2]int16{0, 6}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Version, req.Groups = v, []string{"offsets", "join-a", "none"}
			return h.c.DescribeGroups(testCtx, req)
		}},
		{"ListGroups", [2]int16{0, 5}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrListGroupsRequest()
			req.Version = v
			return h.c.ListGroups(testCtx, req)
		}},
		{"DeleteGroups", [2]int16{0, 3}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Version, req.Groups = v, []string{"none", "join-a"}
			return h.c.DeleteGroups(testCtx, req)
		}},
		{"OffsetDelete", [2]int16{0, 0}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.Version, req.Group = v, "offsets"
			req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "other", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			return h.c.OffsetDelete(testCtx, req)
		}},
	}
	for _, c := range calls {
		for version := c.versions[0]; version <= c.versions[1]; version++ {
			resp := c.run(version)
			if resp.GetVersion() != version {
				t.Fatalf("%s v%d answered with version %d", c.name, version, resp.GetVersion())
			}
			encoded := resp.AppendTo(nil)
			fresh := kmsg.ResponseForKey(resp.Key())
			fresh.SetVersion(version)
			if err := fresh.ReadFrom(encoded); err != nil {
				t.Fatalf("%s v%d: response does not decode: %v", c.name, version, err)
			}
			if reencoded := fresh.AppendTo(nil); string(reencoded) != string(encoded) {
				t.Fatalf("%s v%d: response does not round-trip", c.name, version)
			}
		}
	}
}
