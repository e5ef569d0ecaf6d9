package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
)

// groupAPI calls the group per-API handlers directly, on a broker that
// holds only a group coordinator (no sockets, no ticker: time does not
// move, and every call runs on the test's goroutine).
type groupAPI struct {
	t      *testing.T
	broker *Broker
	conn   *connection
	ctx    context.Context
	// stop cancels the broker's context (shutdown).
	stop context.CancelFunc
}

func newGroupAPI(t *testing.T, adjust func(*group.Config)) *groupAPI {
	t.Helper()
	cfg := group.Config{NoInitialRebalanceDelay: true}
	if adjust != nil {
		adjust(&cfg)
	}
	coordinator, err := group.NewCoordinator(cfg, group.NewMemoryStore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = coordinator.Close() })
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	b := &Broker{ctx: ctx, cancel: stop}
	withCoordinatorShards(b, coordinator, nil)
	info := group.ClientInfo{ClientID: "client", Host: "/127.0.0.1"}
	return &groupAPI{t: t, broker: b, conn: &connection{broker: b}, ctx: group.WithClientInfo(context.Background(), info), stop: stop}
}

func groupAPIJoin(version int16, groupID, memberID string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group, req.MemberID = groupID, memberID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 30_000
	req.ProtocolType = "consumer"
	metadata := kmsg.ConsumerMemberMetadata{Topics: []string{"events"}}
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: metadata.AppendTo(nil)}}
	return req
}

func groupAPISync(version int16, groupID, memberID string, generation int32, assignment string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = version
	req.Group, req.MemberID, req.Generation = groupID, memberID, generation
	if assignment != "" {
		req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: memberID, MemberAssignment: []byte(assignment)}}
	}
	return req
}

func (a *groupAPI) join(req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	return serveAPI(a.ctx, a.conn, req).(*kmsg.JoinGroupResponse)
}

func (a *groupAPI) sync(req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	return serveAPI(a.ctx, a.conn, req).(*kmsg.SyncGroupResponse)
}

// simpleCommit commits events-0 at offset (v8, no member).
func (a *groupAPI) simpleCommit(groupID string, offset int64) {
	a.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group = 8, groupID
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "events", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: 7}}}}
	resp := serveAPI(a.ctx, a.conn, req).(*kmsg.OffsetCommitResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		a.t.Fatalf("commit: %d", code)
	}
}

// Every group sentinel maps to the Kafka error clients have always seen
// for it, also when wrapped with context.
func TestGroupErrorCodes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		code *kerr.Error
	}{
		{group.ErrInvalidGroupID, kerr.InvalidGroupID},
		{group.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
		{group.ErrInvalidRebalanceTimeout, kerr.InvalidRequest},
		{group.ErrInconsistentProtocol, kerr.InconsistentGroupProtocol},
		{group.ErrNotCoordinator, kerr.NotCoordinator},
		{group.ErrUnknownMember, kerr.UnknownMemberID},
		{group.ErrMemberIDRequired, kerr.MemberIDRequired},
		{group.ErrFencedInstance, kerr.FencedInstanceID},
		{group.ErrRebalanceInProgress, kerr.RebalanceInProgress},
		{group.ErrIllegalGeneration, kerr.IllegalGeneration},
		{group.ErrCoordinatorUnavailable, kerr.CoordinatorNotAvailable},
		{group.ErrGroupNotFound, kerr.GroupIDNotFound},
		{group.ErrNonEmptyGroup, kerr.NonEmptyGroup},
		{group.ErrSubscribedTopic, kerr.GroupSubscribedToTopic},
		{group.ErrUnknownTopicID, kerr.UnknownTopicID},
		{group.ErrMetadataTooLarge, kerr.OffsetMetadataTooLarge},
		{group.ErrUnstableOffset, kerr.UnstableOffsetCommit},
	} {
		wrapped := fmt.Errorf("group %q: %w", "g", c.err)
		if got := errorCode(wrapped); got != c.code.Code {
			t.Errorf("%v: code %d, want %s (%d)", c.err, got, c.code.Message, c.code.Code)
		}
	}
}

// Every group handler answers every version it serves with a response of
// that version, which kmsg encodes and decodes back to the same bytes.
func TestGroupResponsesEncodeAtEveryVersion(t *testing.T) {
	t.Parallel()
	a := newGroupAPI(t, nil)
	a.simpleCommit("offsets", 1)
	metadata := "m"
	calls := []versionedCall{
		{"JoinGroup", [2]int16{0, 9}, func(v int16) kmsg.Response {
			return a.join(groupAPIJoin(v, "join-"+string(rune('a'+v)), ""))
		}},
		{"SyncGroup", [2]int16{0, 5}, func(v int16) kmsg.Response { return a.sync(groupAPISync(v, "none", "m", 1, "")) }},
		{"Heartbeat", [2]int16{0, 4}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Version, req.Group, req.MemberID = v, "none", "m"
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"LeaveGroup", [2]int16{0, 5}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Version, req.Group, req.MemberID = v, "none", "m"
			req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"OffsetCommit", [2]int16{0, 10}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Version, req.Group = v, "offsets"
			req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "events", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 2, Metadata: &metadata}}}}
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"OffsetFetch", [2]int16{0, 10}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version, req.Group = v, "offsets"
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "events", Partitions: []int32{0}}}
			req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "offsets"}}
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"DescribeGroups", [2]int16{0, 6}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Version, req.Groups = v, []string{"offsets", "join-a", "none"}
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"ListGroups", [2]int16{0, 5}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrListGroupsRequest()
			req.Version = v
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"DeleteGroups", [2]int16{0, 3}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Version, req.Groups = v, []string{"none", "join-a"}
			return serveAPI(a.ctx, a.conn, req)
		}},
		{"OffsetDelete", [2]int16{0, 0}, func(v int16) kmsg.Response {
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.Version, req.Group = v, "offsets"
			req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "other", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			return serveAPI(a.ctx, a.conn, req)
		}},
	}
	checkEveryVersionRoundTrips(t, calls)
}

// JoinGroup responses carry version-specific fields only where the
// version has them; v4+ new members get MEMBER_ID_REQUIRED first, older
// ones are admitted directly.
func TestGroupJoinResponseVersions(t *testing.T) {
	t.Parallel()
	a := newGroupAPI(t, nil)
	v0 := a.join(groupAPIJoin(0, "old", ""))
	if v0.Version != 0 || v0.ErrorCode != 0 || v0.Protocol == nil || *v0.Protocol != "range" || v0.ProtocolType != nil || v0.Generation != 1 {
		t.Fatalf("v0 join: %+v", v0)
	}
	v3 := a.join(groupAPIJoin(3, "v3", ""))
	if v3.ErrorCode != 0 || v3.MemberID == "" {
		t.Fatalf("v3 join with an empty member id must be admitted: %+v", v3)
	}
	v4 := a.join(groupAPIJoin(4, "v4", ""))
	if v4.ErrorCode != kerr.MemberIDRequired.Code || v4.MemberID == "" || v4.Generation != -1 {
		t.Fatalf("v4 join with an empty member id: %+v", v4)
	}
	v9 := a.join(groupAPIJoin(9, "v4", v4.MemberID))
	if v9.ErrorCode != 0 || v9.ProtocolType == nil || *v9.ProtocolType != "consumer" || v9.LeaderID != v4.MemberID {
		t.Fatalf("v9 join: %+v", v9)
	}
	failed := a.join(groupAPIJoin(6, "", ""))
	if failed.Version != 6 || failed.ErrorCode != kerr.InvalidGroupID.Code || failed.Protocol == nil || *failed.Protocol != "" {
		t.Fatalf("v6 error response must carry a non-null protocol: %+v", failed)
	}
	failed = a.join(groupAPIJoin(7, "", ""))
	if failed.Protocol != nil || failed.ProtocolType != nil {
		t.Fatalf("v7 error response: null protocol and type expected: %+v", failed)
	}
	// v0 has no rebalance timeout: the session timeout stands in for it, so
	// a negative rebalance timeout field is not read.
	old := groupAPIJoin(0, "old-negative", "")
	old.RebalanceTimeoutMillis = -1
	if resp := a.join(old); resp.ErrorCode != 0 {
		t.Fatalf("v0 join ignores the rebalance timeout: %+v", resp)
	}
	v1 := groupAPIJoin(1, "v1-negative", "")
	v1.RebalanceTimeoutMillis = -1
	if resp := a.join(v1); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v1 join with a negative rebalance timeout: %+v", resp)
	}
}

// SyncGroup, DescribeGroups, ListGroups and DeleteGroups encode what each
// version has.
func TestGroupAdminResponseVersions(t *testing.T) {
	t.Parallel()
	a := newGroupAPI(t, nil)
	join := groupAPIJoin(9, "g", "")
	instance := "instance-1"
	join.InstanceID = &instance
	joined := a.join(join) // a static member is admitted without KIP-394's round
	if joined.ErrorCode != 0 {
		t.Fatalf("join: %+v", joined)
	}
	a.simpleCommit("offsets-only", 1)
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Version = 5
	describe.Groups = []string{"g", "missing"}
	described := serveAPI(a.ctx, a.conn, describe).(*kmsg.DescribeGroupsResponse)
	if g := described.Groups[0]; g.State != "CompletingRebalance" || g.Protocol != "" || g.Members[0].ProtocolMetadata != nil {
		t.Fatalf("describe while completing: %+v", g)
	}
	if missing := described.Groups[1]; missing.State != "Dead" || missing.ErrorCode != 0 || missing.AuthorizedOperations != -2147483648 {
		t.Fatalf("describe v5 of a missing group: %+v", missing)
	}
	sync := a.sync(groupAPISync(3, "g", joined.MemberID, joined.Generation, "parts"))
	if sync.ErrorCode != 0 || sync.Protocol != nil || sync.ProtocolType != nil || string(sync.MemberAssignment) != "parts" {
		t.Fatalf("sync v3 must not carry v5 fields: %+v", sync)
	}
	sync = a.sync(groupAPISync(5, "g", joined.MemberID, joined.Generation, ""))
	if sync.ErrorCode != 0 || sync.Protocol == nil || *sync.Protocol != "range" || sync.ProtocolType == nil || *sync.ProtocolType != "consumer" {
		t.Fatalf("sync v5 must name the protocol type and protocol: %+v", sync)
	}
	described = serveAPI(a.ctx, a.conn, describe).(*kmsg.DescribeGroupsResponse)
	if g := described.Groups[0]; g.State != "Stable" || g.Protocol != "range" || g.Members[0].InstanceID == nil || string(g.Members[0].MemberAssignment) != "parts" {
		t.Fatalf("describe v5 stable: %+v", g)
	}
	describe.Version = 6
	missing := serveAPI(a.ctx, a.conn, describe).(*kmsg.DescribeGroupsResponse).Groups[1]
	if missing.ErrorCode != kerr.GroupIDNotFound.Code || missing.ErrorMessage == nil || *missing.ErrorMessage != "group missing not found" {
		t.Fatalf("describe v6 of a missing group: %+v", missing)
	}
	describe.Version = 3
	if old := serveAPI(a.ctx, a.conn, describe).(*kmsg.DescribeGroupsResponse).Groups[0]; old.Members[0].InstanceID != nil {
		t.Fatalf("describe v3 must not carry instance ids: %+v", old)
	}

	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 4
	list.StatesFilter = []string{"stable"}
	listed := serveAPI(a.ctx, a.conn, list).(*kmsg.ListGroupsResponse)
	if len(listed.Groups) != 1 || listed.Groups[0].Group != "g" || listed.Groups[0].GroupState != "Stable" || listed.Groups[0].GroupType != "" {
		t.Fatalf("list v4 filtered: %+v", listed)
	}
	list.Version = 3 // no state filter before v4
	if listed = serveAPI(a.ctx, a.conn, list).(*kmsg.ListGroupsResponse); len(listed.Groups) != 2 || listed.Groups[0].GroupState != "" {
		t.Fatalf("list v3: %+v", listed)
	}
	list.Version = 5
	list.StatesFilter = nil
	list.TypesFilter = []string{"Classic"}
	listed = serveAPI(a.ctx, a.conn, list).(*kmsg.ListGroupsResponse)
	if len(listed.Groups) != 2 || listed.Groups[0].Group != "g" || listed.Groups[1].ProtocolType != "" || listed.Groups[1].GroupType != "classic" {
		t.Fatalf("list v5: %+v", listed)
	}
	list.TypesFilter = []string{"consumer"}
	if listed = serveAPI(a.ctx, a.conn, list).(*kmsg.ListGroupsResponse); len(listed.Groups) != 0 {
		t.Fatalf("list v5 for KIP-848 groups: %+v", listed)
	}

	remove := kmsg.NewPtrDeleteGroupsRequest()
	remove.Version = 3
	remove.Groups = []string{"g", "offsets-only"}
	deleted := serveAPI(a.ctx, a.conn, remove).(*kmsg.DeleteGroupsResponse)
	if deleted.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code || deleted.Groups[0].ErrorMessage == nil ||
		*deleted.Groups[0].ErrorMessage != kerr.NonEmptyGroup.Error() || deleted.Groups[1].ErrorCode != 0 || deleted.Groups[1].ErrorMessage != nil {
		t.Fatalf("delete groups v3: %+v", deleted)
	}
}

// LeaveGroup v0–2 name one member and answer with the top-level code;
// v3+ answer per member.
func TestGroupLeaveVersions(t *testing.T) {
	t.Parallel()
	a := newGroupAPI(t, nil)
	joined := a.join(groupAPIJoin(3, "g", ""))
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 4
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "client-unknown"}}
	resp := serveAPI(a.ctx, a.conn, leave).(*kmsg.LeaveGroupResponse)
	if resp.ErrorCode != 0 || len(resp.Members) != 1 || resp.Members[0].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave v4 of an unknown member: %+v", resp)
	}
	leave.Version = 0
	leave.MemberID = joined.MemberID
	if resp = serveAPI(a.ctx, a.conn, leave).(*kmsg.LeaveGroupResponse); resp.ErrorCode != 0 || len(resp.Members) != 0 {
		t.Fatalf("leave v0: %+v", resp)
	}
	if resp = serveAPI(a.ctx, a.conn, leave).(*kmsg.LeaveGroupResponse); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave v0 again: %+v", resp)
	}
	leave.Group = ""
	if resp = serveAPI(a.ctx, a.conn, leave).(*kmsg.LeaveGroupResponse); resp.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("leave without a group: %+v", resp)
	}
}

type groupAPITopics map[string][16]byte

func (f groupAPITopics) TopicName(id [16]byte) (string, bool) {
	for name, known := range f {
		if known == id {
			return name, true
		}
	}
	return "", false
}

func (f groupAPITopics) TopicID(name string) ([16]byte, bool) {
	id, ok := f[name]
	return id, ok
}

// OffsetCommit v10 and OffsetFetch v10 name topics by id; OffsetFetch
// before v2 carries no group-level error.
func TestGroupOffsetsByTopicIDVersions(t *testing.T) {
	t.Parallel()
	eventsID := [16]byte{1, 2, 3}
	a := newGroupAPI(t, func(cfg *group.Config) { cfg.Topics = groupAPITopics{"events": eventsID} })
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version = 10
	commit.Group = "g"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{
		{TopicID: eventsID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 77, LeaderEpoch: 4}}},
		{TopicID: [16]byte{9}, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}},
	}
	resp := serveAPI(a.ctx, a.conn, commit).(*kmsg.OffsetCommitResponse)
	if resp.Topics[0].TopicID != eventsID || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("v10 commit: %+v", resp)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 10
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
	got := serveAPI(a.ctx, a.conn, fetch).(*kmsg.OffsetFetchResponse)
	topics := got.Groups[0].Topics
	if len(topics) != 1 || topics[0].TopicID != eventsID || topics[0].Partitions[0].Offset != 77 || topics[0].Partitions[0].LeaderEpoch != 4 {
		t.Fatalf("v10 fetch: %+v", got)
	}
	// Before v6 OffsetCommit carries no leader epoch; before v5 OffsetFetch
	// returns none.
	commit.Version = 5
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "events", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 78, LeaderEpoch: 4}}}}
	serveAPI(a.ctx, a.conn, commit)
	fetch.Version = 5
	fetch.Group = "g"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "events", Partitions: []int32{0}}}
	partition := serveAPI(a.ctx, a.conn, fetch).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
	if partition.Offset != 78 || partition.LeaderEpoch != -1 {
		t.Fatalf("v5 commit then v5 fetch: %+v", partition)
	}
}

// A parked JoinGroup or SyncGroup whose context ends answers
// REBALANCE_IN_PROGRESS (the member must rejoin); while the broker shuts
// down, NOT_COORDINATOR.
func TestGroupParkedRequestAbandoned(t *testing.T) {
	t.Parallel()
	a := newGroupAPI(t, func(cfg *group.Config) {
		cfg.NoInitialRebalanceDelay = false
		cfg.GroupInitialRebalanceDelay = time.Hour // joins park: time does not move
	})
	gone, cancel := context.WithCancel(a.ctx)
	cancel()
	resp := serveAPI(gone, a.conn, groupAPIJoin(3, "g", "")).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != kerr.RebalanceInProgress.Code || resp.MemberID == "" || resp.Generation != -1 {
		t.Fatalf("join abandoned by its client: %+v", resp)
	}
	a.stop()
	resp = serveAPI(gone, a.conn, groupAPIJoin(3, "g", "")).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join parked at shutdown: %+v", resp)
	}
	if !errors.Is(a.broker.duringShutdown(group.ErrRebalanceInProgress), group.ErrNotCoordinator) {
		t.Fatal("REBALANCE_IN_PROGRESS must become NOT_COORDINATOR at shutdown")
	}
}

// FindCoordinator names this broker for groups and transactional ids, and
// answers another key type INVALID_REQUEST with a message (v4+: per key).
func TestGroupFindCoordinatorKeyTypes(t *testing.T) {
	t.Parallel()
	a := newGroupAPI(t, nil)
	a.broker.nodeID, a.broker.advertisedHost, a.broker.advertisedPort = 3, "localhost", 9092
	coordinator, _, _ := a.broker.replication.groups.lookup(0)
	withCoordinatorShards(a.broker, coordinator, nil) // led by broker 3
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorKey = "g"
	resp := serveAPI(a.ctx, a.conn, req).(*kmsg.FindCoordinatorResponse)
	if resp.ErrorCode != 0 || resp.NodeID != 3 || resp.Host != "localhost" || resp.Port != 9092 {
		t.Fatalf("v3 group key: %+v", resp)
	}
	req.Version = 4
	req.CoordinatorType = 2
	req.CoordinatorKeys = []string{"a", "b"}
	resp = serveAPI(a.ctx, a.conn, req).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 2 {
		t.Fatalf("v4 batch: %+v", resp)
	}
	for _, answer := range resp.Coordinators {
		if answer.ErrorCode != kerr.InvalidRequest.Code || answer.NodeID != -1 || answer.ErrorMessage == nil || *answer.ErrorMessage != "unknown coordinator key type" {
			t.Fatalf("unknown key type: %+v", answer)
		}
	}
}
