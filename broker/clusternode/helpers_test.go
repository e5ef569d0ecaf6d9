package clusternode

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/internal/testutil"
	"github.com/exactly-eos/exactly/wire"
)

// testCluster is n members in this test process on loopback.
type testCluster struct {
	t       *testing.T
	voters  map[int32]quorum.VoterAddrs
	listen  map[int32]string
	dirs    map[int32]string
	props   map[string]string
	members map[int32]*Member
	// proxied is set by newProxiedCluster: every
	// member behind partition proxies, dialing from its own source.
	proxied map[int32]proxiedMember
	// memberProps are settings of one member over props; usersFile is
	// every member's Config.UsersFile (newTestClusterWith's setup sets them).
	memberProps map[int32]map[string]string
	usersFile   string
	// metrics are members' broker metrics (newTestClusterWith's setup
	// sets them; nil: none).
	metrics map[int32]*metrics.Broker
}

func newTestCluster(t *testing.T, n int, props map[string]string) *testCluster {
	t.Helper()
	return newTestClusterWith(t, n, props, nil)
}

// newTestClusterWith is newTestCluster with setup run on the cluster
// before its members start (to set memberProps or usersFile).
func newTestClusterWith(t *testing.T, n int, props map[string]string, setup func(*testCluster)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, voters: map[int32]quorum.VoterAddrs{}, listen: map[int32]string{},
		dirs: map[int32]string{}, props: props, members: map[int32]*Member{}}
	root := t.TempDir()
	for id := int32(1); id <= int32(n); id++ {
		addrs := testutil.FreeAddrs(t, 3)
		c.voters[id] = quorum.VoterAddrs{Raft: addrs[0], RPC: addrs[1]}
		c.listen[id] = addrs[2]
		c.dirs[id] = filepath.Join(root, "member-"+strconv.Itoa(int(id)))
	}
	t.Cleanup(func() {
		for id := range c.members {
			c.stop(id)
		}
	})
	if setup != nil {
		setup(c)
	}
	for id := int32(1); id <= int32(n); id++ {
		c.start(id)
	}
	return c
}

func (c *testCluster) start(id int32) {
	c.t.Helper()
	px := c.proxied[id]
	props := c.props
	if extra := c.memberProps[id]; extra != nil {
		props = maps.Clone(c.props)
		maps.Copy(props, extra)
	}
	m, err := Start(Config{
		NodeID: id, Listen: c.listen[id], DataDir: c.dirs[id], Voters: c.voters, Properties: props, UsersFile: c.usersFile,
		Logger: testLogger(), HeartbeatInterval: 50 * time.Millisecond, SessionTimeout: 800 * time.Millisecond, ElectionTimeout: 400 * time.Millisecond,
		Advertised: px.advertised, SourceAddress: px.source, RaftListen: px.raftListen, RPCListen: px.rpcListen,
		Metrics: c.metrics[id],
	})
	if err != nil {
		c.t.Fatalf("start member %d: %v", id, err)
	}
	c.members[id] = m
}

func (c *testCluster) stop(id int32) {
	c.t.Helper()
	m := c.members[id]
	if m == nil {
		return
	}
	delete(c.members, id)
	if err := m.Close(); err != nil {
		c.t.Errorf("close member %d: %v", id, err)
	}
}

// bootstrap is every listener (also of stopped members).
func (c *testCluster) bootstrap() []string {
	var out []string
	for id := int32(1); id <= int32(len(c.listen)); id++ {
		if px, ok := c.proxied[id]; ok {
			out = append(out, px.advertised)
			continue
		}
		out = append(out, c.listen[id])
	}
	return out
}

// client returns a client of the cluster with options, and its admin
// view; both close when the test ends.
func (c *testCluster) client(options ...kgo.Opt) (*kgo.Client, *kadm.Client) {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.bootstrap()...)}, options...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

// anyMember returns a running member.
func (c *testCluster) anyMember() *Member {
	for _, m := range c.members {
		return m
	}
	c.t.Fatal("no member running")
	return nil
}

// waitImage waits until a running member's quorum image satisfies cond.
func (c *testCluster) waitImage(what string, cond func(*quorum.Image) bool) *quorum.Image {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	img, err := c.anyMember().Node().WaitFor(ctx, cond)
	if err != nil {
		c.t.Fatalf("waiting for %s: %v", what, err)
	}
	return img
}

// waitMetadata waits until every running member answers Metadata with
// the want brokers and, when topic is not empty, the topic's partition 0
// with a leader and an ISR of isr members.
func (c *testCluster) waitMetadata(want int, topic string, isr int) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for id, m := range c.members {
		for {
			err := checkMetadata(m.Addr(), want, topic, isr)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("member %d: %v", id, err)
			}
			time.Sleep(50 * time.Millisecond) // poll interval of a bounded condition wait
		}
	}
}

// metadataOf asks one broker for Metadata of topic (all topics if "").
func metadataOf(addr, topic string) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	if topic != "" {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return req.RequestWith(ctx, cl.Broker(math.MinInt32)) // the seed broker itself (kgo numbers seeds from MinInt32)
}

func checkMetadata(addr string, want int, topic string, isr int) error {
	resp, err := metadataOf(addr, topic)
	if err != nil {
		return err
	}
	if len(resp.Brokers) != want {
		return fmt.Errorf("%s lists %d brokers, want %d", addr, len(resp.Brokers), want)
	}
	if topic == "" {
		return nil
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) == 0 {
		return fmt.Errorf("%s: topic %s not described: %+v", addr, topic, resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != isr {
		return fmt.Errorf("%s: %s-0: error %v, leader %d, ISR %v (want %d members)", addr, topic, kerr.ErrorForCode(p.ErrorCode), p.Leader, p.ISR, isr)
	}
	return nil
}

// createTopic creates a topic through a client (CreateTopics).
func createTopic(t *testing.T, cl *kgo.Client, topic string, partitions int32, rf int16) {
	t.Helper()
	if created := createTopicAnswer(t, cl, topic, partitions, rf); created.ErrorCode != 0 {
		t.Fatalf("CreateTopics %s: %v %v", topic, kerr.ErrorForCode(created.ErrorCode), created.ErrorMessage)
	}
}

// createTopicAnswer sends CreateTopics for one topic and returns the
// answer for it, whatever its error code.
func createTopicAnswer(t *testing.T, cl *kgo.Client, topic string, partitions int32, rf int16) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 20000
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	return resp.Topics[0]
}

// partitionOf returns partition 0 of topic in img.
func partitionOf(img *quorum.Image, topic string) (quorum.Partition, bool) {
	return img.Partition(topic, 0)
}

// fullISR reports whether every partition of topic has a leader and an
// ISR as large as its replica set.
func fullISR(img *quorum.Image, topic string) bool {
	tp, ok := img.Topic(topic)
	if !ok {
		return false
	}
	for _, p := range tp.Partitions {
		if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
			return false
		}
	}
	return true
}

// readAll consumes one partition from the start until it has read up to
// the high watermark, bounded by a deadline; it returns the values.
func readAll(t *testing.T, seeds []string, topic string, partition int32) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end := endOffset(ctx, t, cl, topic, partition)
	var out []string
	var next int64
	for next < end {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d of %d records before the deadline", topic, next, end)
		}
		fetches.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fetches.EachRecord(func(r *kgo.Record) {
			out = append(out, string(r.Value))
			next = r.Offset + 1
		})
	}
	return out
}

// endOffset is a partition's high watermark (ListOffsets latest).
func endOffset(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, partition int32) int64 {
	t.Helper()
	for {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = partition, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 && resp.Topics[0].Partitions[0].ErrorCode == 0 {
			return resp.Topics[0].Partitions[0].Offset
		}
		if ctx.Err() != nil {
			t.Fatalf("list offsets of %s: %v %+v", topic, err, resp)
		}
		time.Sleep(100 * time.Millisecond) // retry interval of a bounded wait
	}
}

// checkExactlyOnce asserts that every acknowledged value is read exactly
// once and the values read are in production order (values are
// zero-padded sequence numbers).
func checkExactlyOnce(t *testing.T, acked []string, read []string) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range read {
		seen[v]++
	}
	lost, dup := 0, 0
	for _, v := range acked {
		if seen[v] == 0 {
			lost++
		}
	}
	for v, n := range seen {
		if n > 1 {
			dup++
			t.Errorf("value %s read %d times", v, n)
		}
	}
	if !slices.IsSorted(read) {
		t.Errorf("records out of order")
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged records lost", lost, len(acked))
	}
	t.Logf("acknowledged %d, read %d, lost %d, duplicated %d", len(acked), len(read), lost, dup)
}

// rawProduce sends one acks=all Produce of a plain one-record batch to the
// broker at addr and returns the partition's error code.
func rawProduce(t *testing.T, addr, topic string, topicID [16]byte, partition int32, value string) int16 {
	t.Helper()
	batch, err := wire.BuildBatch(wire.PlainBatchOptions(), []wire.BuilderRecord{{TimestampMillis: time.Now().UnixMilli(), Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID // v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32))
	if err != nil {
		t.Fatalf("produce to %s: %v", addr, err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// waitBrokerISR waits until the broker at addr answers Metadata with an
// ISR of n members for the partition (what its roles say, not only the
// quorum's image).
func waitBrokerISR(t *testing.T, addr, topic string, partition int32, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := metadataOf(addr, topic)
		if err == nil && len(resp.Topics) == 1 {
			for _, p := range resp.Topics[0].Partitions {
				if p.Partition == partition && len(p.ISR) == n {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s-%d has no ISR of %d: %v %+v", addr, topic, partition, n, err, resp)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a bounded condition wait
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("EXACTLY_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// topicConfigIs checks one topic config as the broker at addr describes it.
func topicConfigIs(addr, topic, name, want string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(math.MinInt32))
	if err != nil {
		return err
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		return fmt.Errorf("DescribeConfigs %s: %+v", topic, resp.Resources)
	}
	for _, c := range resp.Resources[0].Configs {
		if c.Name == name && c.Value != nil && *c.Value == want {
			return nil
		}
	}
	return fmt.Errorf("%s %s is not %s: %+v", topic, name, want, resp.Resources[0].Configs)
}

// waitEndOffset waits (bounded) until a partition's high watermark is at
// least want and returns how long that took.
func waitEndOffset(t *testing.T, seeds []string, topic string, partition int32, want int64) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		end := endOffset(ctx, t, cl, topic, partition)
		if end >= want {
			return time.Since(start)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s-%d: high watermark %d, want %d", topic, partition, end, want)
		}
		time.Sleep(50 * time.Millisecond) // poll interval of a bounded condition wait
	}
}
