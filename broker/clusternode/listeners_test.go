package clusternode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/exactly-eos/exactly/broker/quorum"
	"github.com/exactly-eos/exactly/internal/testutil"
)

// saslUsers is the users file every member of TestSASLListenersInCluster
// is given (credentials are kept per member).
const saslUsers = `
users:
  - name: alice
    password: alice-secret
`

// TestSASLListenersInCluster: members with two listeners, PLAINTEXT for
// the brokers (inter.broker.listener.name's default) and SASL_PLAINTEXT
// for clients. A client that only knows the SASL listeners is told every
// member at its SASL endpoint (Metadata, FindCoordinator,
// DescribeCluster), never at the brokers' listener; through them it
// creates a replicated topic, commits a transaction over partitions of
// several leaders and reads it back read_committed, while the members
// replicate and send markers to each other over PLAINTEXT. A client
// without credentials gets nowhere on the SASL listener.
func TestSASLListenersInCluster(t *testing.T) {
	t.Parallel()
	props := coordinatorProps()
	c := newTestClusterWith(t, 3, props, func(c *testCluster) {
		c.memberProps = map[int32]map[string]string{}
		for id, listen := range c.listen {
			c.memberProps[id] = map[string]string{"listeners": "PLAINTEXT://" + listen + ",SASL_PLAINTEXT://127.0.0.1:0"}
		}
		c.usersFile = filepath.Join(t.TempDir(), "users.yaml")
		if err := os.WriteFile(c.usersFile, []byte(saslUsers), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	c.waitMetadata(3, "", 0)
	saslAddr := map[int32]string{}
	var seeds []string
	for id, m := range c.members {
		saslAddr[id] = m.Broker().ListenerAddr("SASL_PLAINTEXT")
		seeds = append(seeds, saslAddr[id])
	}
	alice := kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// Every member, at its SASL endpoint, in Metadata and DescribeCluster.
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds[0]), alice, kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	testutil.Eventually(t, 20*time.Second, "Metadata on the SASL listener lists every member's SASL endpoint", func() (bool, string) {
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, admin)
		if err != nil {
			return false, err.Error()
		}
		return sameEndpoints(meta.Brokers, saslAddr), fmt.Sprintf("brokers %s", describeBrokers(meta.Brokers))
	})
	cluster, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var described []kmsg.MetadataResponseBroker
	for _, b := range cluster.Brokers {
		described = append(described, kmsg.MetadataResponseBroker{NodeID: b.NodeID, Host: b.Host, Port: b.Port})
	}
	if !sameEndpoints(described, saslAddr) {
		t.Errorf("DescribeCluster on the SASL listener: %s, want %v", describeBrokers(described), saslAddr)
	}

	// A transaction over every partition of an RF-3 topic, through SASL only.
	createTopic(t, admin, "secure", 3, 3)
	img := c.waitImage("secure with full ISRs", func(img *quorum.Image) bool { return fullISR(img, "secure") })
	if n := distinctLeaders(img, "secure"); n < 2 {
		t.Fatalf("secure's 3 partitions have %d distinct leaders; the test needs several", n)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), alice, kgo.TransactionalID("secure-tx"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(20*time.Second), kgo.RetryTimeout(40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	coordinator := kmsg.NewPtrFindCoordinatorRequest()
	coordinator.CoordinatorType, coordinator.CoordinatorKeys = 1, []string{"secure-tx"}
	found, err := coordinator.RequestWith(ctx, admin)
	if err != nil || len(found.Coordinators) != 1 || found.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %v %+v", err, found)
	}
	fc := found.Coordinators[0]
	if got := fmt.Sprintf("%s:%d", fc.Host, fc.Port); got != saslAddr[fc.NodeID] {
		t.Errorf("FindCoordinator on the SASL listener: node %d at %s, want its SASL endpoint %s", fc.NodeID, got, saslAddr[fc.NodeID])
	}
	if err := producer.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 9 {
		value := fmt.Sprintf("secret-%d", i)
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "secure", Partition: int32(i % 3), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", value, err)
		}
		want = append(want, value)
	}
	if err := producer.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), alice, kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var read []string
	for len(read) < len(want) && ctx.Err() == nil {
		fetches := consumer.PollFetches(ctx)
		fetches.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fetches.EachRecord(func(r *kgo.Record) { read = append(read, string(r.Value)) })
	}
	if len(read) != len(want) {
		t.Fatalf("read_committed over SASL read %d of %d committed records: %v", len(read), len(want), read)
	}

	// Without credentials the SASL listener serves nothing.
	anonymous, err := kgo.NewClient(kgo.SeedBrokers(seeds[0]), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer anonymous.Close()
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	defer cancelShort()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(short, anonymous); err == nil {
		t.Error("Metadata without SASL on the SASL listener was answered")
	}
}

// sameEndpoints reports whether brokers are exactly the members of want
// at the addresses want gives.
func sameEndpoints(brokers []kmsg.MetadataResponseBroker, want map[int32]string) bool {
	if len(brokers) != len(want) {
		return false
	}
	for _, b := range brokers {
		if fmt.Sprintf("%s:%d", b.Host, b.Port) != want[b.NodeID] {
			return false
		}
	}
	return true
}

func describeBrokers(brokers []kmsg.MetadataResponseBroker) string {
	var parts []string
	for _, b := range brokers {
		parts = append(parts, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
	}
	return strings.Join(parts, ",")
}

// TestInterBrokerListenerMustBePlaintext: a member whose inter-broker
// listener is not PLAINTEXT (named, or the only one) does not start, and
// says why in one line.
func TestInterBrokerListenerMustBePlaintext(t *testing.T) {
	t.Parallel()
	addrs := testutil.FreeAddrs(t, 2)
	voters := map[int32]quorum.VoterAddrs{1: {Raft: addrs[0], RPC: addrs[1]}}
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"named SASL", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "inter.broker.listener.name": "SASL_PLAINTEXT"},
			"inter-broker listener SASL_PLAINTEXT is SASL_PLAINTEXT"},
		{"only SASL", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}, "inter-broker listener SASL_PLAINTEXT is SASL_PLAINTEXT"},
		{"unknown name", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "inter.broker.listener.name": "internal"},
			"inter.broker.listener.name=INTERNAL names no listener (listeners: PLAINTEXT)"},
	} {
		m, err := Start(Config{NodeID: 1, DataDir: t.TempDir(), Voters: voters, Properties: tc.props, Logger: testLogger(),
			HeartbeatInterval: 50 * time.Millisecond, ElectionTimeout: 400 * time.Millisecond, SessionTimeout: 800 * time.Millisecond})
		if err == nil {
			m.Close()
			t.Errorf("%s: started", tc.name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q, want one line with %q", tc.name, msg, tc.want)
		}
	}
}
