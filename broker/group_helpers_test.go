package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers of the group end-to-end tests (group_e2e_test.go).

// groupTestProperties lets members use short sessions and starts the
// first rebalance of a group at once.
func groupTestProperties() map[string]string {
	return map[string]string{
		"group.initial.rebalance.delay.ms": "0",
		"group.min.session.timeout.ms":     "500",
		"offsets.topic.num.partitions":     "5",
	}
}

// ownership is the client-side view of a group: the partitions each
// consumer was told it owns (kgo's assigned / revoked / lost callbacks),
// and the group management errors each consumer reported.
type ownership struct {
	mu     sync.Mutex
	owned  map[string]map[int32]bool
	errors map[string][]error
}

func newOwnership() *ownership {
	return &ownership{owned: map[string]map[int32]bool{}, errors: map[string][]error{}}
}

// groupErrorHook records a consumer's group management errors.
type groupErrorHook struct {
	name  string
	owner *ownership
}

// OnGroupManageError implements kgo.HookGroupManageError.
func (h groupErrorHook) OnGroupManageError(err error) {
	h.owner.mu.Lock()
	defer h.owner.mu.Unlock()
	h.owner.errors[h.name] = append(h.owner.errors[h.name], err)
}

// options are the kgo options that feed the consumer name's view.
func (o *ownership) options(name string) []kgo.Opt {
	update := func(partitions map[string][]int32, owned bool) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.owned[name] == nil {
			o.owned[name] = map[int32]bool{}
		}
		for _, list := range partitions {
			for _, p := range list {
				if owned {
					o.owned[name][p] = true
				} else {
					delete(o.owned[name], p)
				}
			}
		}
	}
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { update(p, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { update(p, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, p map[string][]int32) { update(p, false) }),
		kgo.WithHooks(groupErrorHook{name: name, owner: o}),
	}
}

// shared reports whether members own every partition of 0..partitions-1
// between them, each some and no partition twice.
func (o *ownership) shared(members []string, partitions int32) (bool, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	view := map[string][]int32{}
	for _, m := range members {
		view[m] = slices.Sorted(maps.Keys(o.owned[m]))
	}
	return checkShare(view, partitions)
}

// errorsOf returns the group management errors members reported.
func (o *ownership) errorsOf(members ...string) []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var all []error
	for _, m := range members {
		all = append(all, o.errors[m]...)
	}
	return all
}

// checkShare reports whether the members' partition lists are non-empty,
// disjoint and cover 0..partitions-1.
func checkShare(view map[string][]int32, partitions int32) (bool, string) {
	seen := map[int32]string{}
	for member, list := range view {
		if len(list) == 0 {
			return false, fmt.Sprintf("%s owns nothing (view %v)", member, view)
		}
		for _, p := range list {
			if other, twice := seen[p]; twice {
				return false, fmt.Sprintf("partition %d owned by %s and %s (view %v)", p, other, member, view)
			}
			seen[p] = member
		}
	}
	if int32(len(seen)) != partitions {
		return false, fmt.Sprintf("%d of %d partitions owned (view %v)", len(seen), partitions, view)
	}
	return true, ""
}

// describeGroup returns the broker's description of one group.
func describeGroup(t *testing.T, client *kgo.Client, groupID string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{groupID}
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("describe group %s: %v", groupID, err)
	}
	if len(resp.Groups) != 1 {
		t.Fatalf("describe group %s: %d groups in the answer", groupID, len(resp.Groups))
	}
	return resp.Groups[0]
}

// serverShare reports whether the broker's view of the group is Stable
// with members members whose assignments share the topic's partitions.
func serverShare(t *testing.T, client *kgo.Client, groupID, topic string, members int, partitions int32) (bool, string) {
	described := describeGroup(t, client, groupID)
	if described.State != "Stable" || len(described.Members) != members {
		return false, fmt.Sprintf("group %s is %s with %d members, want Stable with %d", groupID, described.State, len(described.Members), members)
	}
	view := map[string][]int32{}
	for _, member := range described.Members {
		var assignment kmsg.ConsumerMemberAssignment
		if err := assignment.ReadFrom(member.MemberAssignment); err != nil {
			return false, fmt.Sprintf("member %s: assignment does not decode: %v", member.MemberID, err)
		}
		view[member.MemberID] = nil
		for _, assigned := range assignment.Topics {
			if assigned.Topic == topic {
				view[member.MemberID] = append(view[member.MemberID], assigned.Partitions...)
			}
		}
	}
	return checkShare(view, partitions)
}

// killableDialer connects a kgo client and can later cut every
// connection it made and refuse new ones: the client goes silent without
// leaving its group, as a crashed process would.
type killableDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (d *killableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.killed {
		conn.Close()
		return nil, errors.New("killed: no more connections")
	}
	d.conns = append(d.conns, conn)
	return conn, nil
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.killed = true
	for _, conn := range d.conns {
		conn.Close()
	}
}

// produceNumbered writes count records whose values are their indexes,
// record i to partition i % partitions.
func produceNumbered(t *testing.T, b *Broker, topic string, partitions int32, count int) {
	t.Helper()
	producer := newTestClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	records := make([]*kgo.Record, count)
	for i := range records {
		records[i] = &kgo.Record{Partition: int32(i) % partitions, Value: []byte(strconv.Itoa(i))}
	}
	if err := producer.ProduceSync(testContext(t, 30*time.Second), records...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", count, topic, err)
	}
	producer.Close()
}

// committedOffsets returns the group's committed offsets of topic.
func committedOffsets(t *testing.T, client *kgo.Client, groupID, topic string) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = groupID
	req.Topics = nil // every committed offset
	resp, err := req.RequestWith(testContext(t, 10*time.Second), client)
	if err != nil {
		t.Fatalf("offset fetch %s: %v", groupID, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("offset fetch %s: %v", groupID, err)
	}
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		if rt.Topic != topic {
			continue
		}
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("offset fetch %s %s-%d: %v", groupID, topic, rp.Partition, err)
			}
			out[rp.Partition] = rp.Offset
		}
	}
	return out
}

// rawMember is a group member driven by hand-made requests, each member on
// its own client (so its own connections).
type rawMember struct {
	client     *kgo.Client
	group      string
	topic      string
	topicID    [16]byte
	id         string
	generation int32
}

func newRawMember(t *testing.T, b *Broker, groupID, topic string) *rawMember {
	t.Helper()
	described := b.topicByName(topic)
	if described == nil {
		t.Fatalf("no topic %s", topic)
	}
	return &rawMember{client: newTestClient(t, b), group: groupID, topic: topic, topicID: described.id, generation: -1}
}

// joinOnce sends one JoinGroup v9 with the member's current id.
func (m *rawMember) joinOnce(ctx context.Context) (*kmsg.JoinGroupResponse, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = m.group, m.id, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 20000
	metadata := kmsg.NewConsumerMemberMetadata()
	metadata.Topics = []string{m.topic}
	protocol := kmsg.NewJoinGroupRequestProtocol()
	protocol.Name, protocol.Metadata = "range", metadata.AppendTo(nil)
	req.Protocols = []kmsg.JoinGroupRequestProtocol{protocol}
	return req.RequestWith(ctx, m.client)
}

// join joins (answering MEMBER_ID_REQUIRED with the id it hands out) and
// returns the completed join.
func (m *rawMember) join(ctx context.Context) (*kmsg.JoinGroupResponse, error) {
	resp, err := m.joinOnce(ctx)
	if err != nil {
		return nil, err
	}
	if resp.ErrorCode == kerr.MemberIDRequired.Code {
		m.id = resp.MemberID
		if resp, err = m.joinOnce(ctx); err != nil {
			return nil, err
		}
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("join %s: %w", m.group, err)
	}
	m.id, m.generation = resp.MemberID, resp.Generation
	return resp, nil
}

// sync sends SyncGroup; the leader passes every member's partitions.
func (m *rawMember) sync(ctx context.Context, assignments map[string][]int32) error {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.generation
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for member, partitions := range assignments {
		assignment := kmsg.NewConsumerMemberAssignment()
		assignment.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: m.topic, Partitions: partitions}}
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: member, MemberAssignment: assignment.AppendTo(nil)})
	}
	resp, err := req.RequestWith(ctx, m.client)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// heartbeat returns the Heartbeat answer's error.
func (m *rawMember) heartbeat(ctx context.Context) error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.generation
	resp, err := req.RequestWith(ctx, m.client)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// commit commits offset for partition 0 as memberID in generation and
// returns the partition's error.
func (m *rawMember) commit(ctx context.Context, memberID string, generation int32, offset int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.group, memberID, generation
	partition := kmsg.NewOffsetCommitRequestTopicPartition()
	partition.Partition, partition.Offset = 0, offset
	// v10 names the topic by id.
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: m.topic, TopicID: m.topicID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{partition}}}
	resp, err := req.RequestWith(ctx, m.client)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("commit answer has %d topics", len(resp.Topics))
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// leave sends LeaveGroup v5 for the member.
func (m *rawMember) leave(ctx context.Context) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = m.group
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m.id}}
	resp, err := req.RequestWith(ctx, m.client)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Members[0].ErrorCode)
}
