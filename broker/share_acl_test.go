package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"

	"github.com/exactly-eos/exactly/internal/sharetest"
)

// TestACLShareGroupNeedsRead: share groups take Kafka's ACLs — READ on
// the group to join and fetch, READ on each topic to get its records,
// DESCRIBE on the group for ShareGroupDescribe (READ implies it).
func TestACLShareGroupNeedsRead(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, t.TempDir(), nil,
		grant(cluster, literal, acl.ClusterName, kmsg.ACLOperationCreate),
		grant(topicRT, literal, "t", kmsg.ACLOperationAll),
		grant(topicRT, literal, "hidden", kmsg.ACLOperationCreate),
		grant(topicRT, literal, "hidden", kmsg.ACLOperationDescribe),
		grant(groupRT, prefixed, "ok-", kmsg.ACLOperationRead),
	)
	admin := newTestClient(t, b)
	createTopic(t, admin, "t", 1, nil)
	createTopic(t, admin, "hidden", 1, nil)
	ctx := testContext(t, 20*time.Second)

	heartbeat := func(group string) int16 {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, "member-1", 0, []string{"t"}
		resp, err := req.RequestWith(ctx, admin)
		if errors.Is(err, kerr.GroupAuthorizationFailed) {
			return kerr.GroupAuthorizationFailed.Code // refused already at FindCoordinator
		}
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := heartbeat("other"); code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("heartbeat without group READ: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if code := heartbeat("ok-1"); code != 0 {
		t.Errorf("heartbeat with group READ: %v", kerr.ErrorForCode(code))
	}

	fetch := func(group, topic string) *kmsg.ShareFetchResponse {
		req := sharetest.FetchRequest(group, "member-1", 0, topicIDOf(t, admin, topic))
		req.MaxWaitMillis = 0
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := fetch("other", "t"); resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("share fetch without group READ: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(resp.ErrorCode))
	}
	resp := fetch("ok-2", "hidden")
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("share fetch of a topic without READ: %+v, want TOPIC_AUTHORIZATION_FAILED on its partition", resp)
	}

	describe := kmsg.NewPtrShareGroupDescribeRequest()
	describe.GroupIDs = []string{"other"}
	described, err := describe.RequestWith(ctx, admin)
	if err != nil && !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatal(err)
	}
	if err == nil && described.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		code := described.Groups[0].ErrorCode
		t.Errorf("share group describe without group DESCRIBE: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
}
