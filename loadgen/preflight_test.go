package loadgen

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// preflightWorkload is the quick workload with the given replication
// factor.
func preflightWorkload(t *testing.T, replicationFactor int) Workload {
	t.Helper()
	workload, err := LoadWorkload("quick")
	if err != nil {
		t.Fatal(err)
	}
	workload.ReplicationFactor = replicationFactor
	return workload
}

// assertOneLine fails unless err is one line holding every wanted part.
func assertOneLine(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one holding %q", want)
	}
	text := err.Error()
	if strings.Contains(text, "\n") {
		t.Errorf("error spans lines: %q", text)
	}
	for _, part := range want {
		if !strings.Contains(text, part) {
			t.Errorf("error %q lacks %q", text, part)
		}
	}
}

// probeTopicsLeft lists the preflight's probe topics still in the cluster.
func probeTopicsLeft(t *testing.T, target Target) []string {
	t.Helper()
	client, err := kgo.NewClient(kgo.SeedBrokers(target.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	response, err := kmsg.NewPtrMetadataRequest().RequestWith(t.Context(), client)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, topic := range response.Topics {
		if topic.Topic != nil && strings.HasPrefix(*topic.Topic, PreflightTopicPrefix) {
			left = append(left, *topic.Topic)
		}
	}
	return left
}

// The preflight passes on the targets the load generator starts itself
// without waiting out a retry, and leaves no probe topic behind. How fast
// it is is logged, not asserted: a timed bound fails on a loaded machine.
// A preflight that retries (a refused request, a topic not yet in
// Metadata) waits up to preflightTimeout, so finishing in under half of
// it shows no step waited it out.
func TestPreflightPassesOnStartedTargets(t *testing.T) {
	embedded, err := startEmbeddedWith(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { embedded.Close() })
	for _, target := range []Target{embedded, newKfakeTarget(t)} {
		t.Run(target.Kind(), func(t *testing.T) {
			// The fastest of three, so one slow scheduling does not fail it.
			elapsed := time.Hour
			for range 3 {
				start := time.Now()
				if err := Preflight(t.Context(), target, preflightWorkload(t, 1)); err != nil {
					t.Fatalf("preflight of %s: %v", target.Description(), err)
				}
				elapsed = min(elapsed, time.Since(start))
			}
			t.Logf("preflight of %s took %v", target.Kind(), elapsed)
			if elapsed >= preflightTimeout/2 {
				t.Errorf("preflight of %s took %v: a step waited out its retries (timeout %v)", target.Kind(), elapsed, preflightTimeout)
			}
			if left := probeTopicsLeft(t, target); len(left) > 0 {
				t.Errorf("probe topics left behind: %v", left)
			}
		})
	}
}

// A replication factor above the cluster's brokers is refused by the
// embedded broker and by kfake, and the error says how many brokers there
// are and which --replication-factor to use; three kfake brokers accept it.
func TestPreflightRefusesReplicationBeyondBrokers(t *testing.T) {
	t.Parallel()
	embedded, err := startEmbeddedWith(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { embedded.Close() })
	for _, target := range []Target{embedded, newKfakeTarget(t)} {
		err := Preflight(t.Context(), target, preflightWorkload(t, 3))
		assertOneLine(t, err, "refused to create topic "+PreflightTopicPrefix, "INVALID_REPLICATION_FACTOR",
			"replication factor 3 is more than its 1 broker", "use --replication-factor 1 or fewer")
	}
	three := newKfakeTarget(t, kfake.NumBrokers(3))
	if err := Preflight(t.Context(), three, preflightWorkload(t, 3)); err != nil {
		t.Fatalf("three kfake brokers and replication factor 3: %v", err)
	}
}

// Refusals the test clusters cannot produce on their own, injected into
// kfake's CreateTopics: each names the Kafka error and its own fix.
func TestPreflightNamesRefusalsAndTheirFix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code    int16
		message string
		want    []string
	}{
		{kerr.TopicAuthorizationFailed.Code, "", []string{"TOPIC_AUTHORIZATION_FAILED", "grant this client CreateTopics and DeleteTopics"}},
		{kerr.ClusterAuthorizationFailed.Code, "", []string{"CLUSTER_AUTHORIZATION_FAILED", "grant this client CreateTopics and DeleteTopics"}},
		{kerr.PolicyViolation.Code, "topic names must\nstart with team.", []string{"POLICY_VIOLATION (topic names must start with team.)",
			"needs to create and delete its own topics named exactly.<run id>.*"}},
		{kerr.InvalidPartitions.Code, "at most 2", []string{"INVALID_PARTITIONS (at most 2)", "use a --partitions the cluster accepts (3 was asked)"}},
	}
	for _, test := range cases {
		target := newKfakeTarget(t).(*kfakeTarget)
		target.cluster.ControlKey(int16(kmsg.CreateTopics), func(request kmsg.Request) (kmsg.Response, error, bool) {
			create := request.(*kmsg.CreateTopicsRequest)
			response := create.ResponseKind().(*kmsg.CreateTopicsResponse)
			for _, topic := range create.Topics {
				refused := kmsg.NewCreateTopicsResponseTopic()
				refused.Topic, refused.ErrorCode = topic.Topic, test.code
				if test.message != "" {
					refused.ErrorMessage = kmsg.StringPtr(test.message)
				}
				response.Topics = append(response.Topics, refused)
			}
			return response, nil, true
		})
		err := Preflight(t.Context(), target, preflightWorkload(t, 1))
		assertOneLine(t, err, append([]string{"kfake at " + target.Bootstrap()[0], "refused to create topic"}, test.want...)...)
	}
}

// Where no Kafka broker answers, the error names the cause in a few words
// and the fix; none takes longer than the preflight's bound.
func TestPreflightNamesWhyNoBrokerAnswers(t *testing.T) {
	defer func(saved time.Duration) { preflightTimeout = saved }(preflightTimeout)
	preflightTimeout = 500 * time.Millisecond
	closed := closedLoopbackAddr(t)
	silent := serveLoopback(t, func(conn net.Conn) {
		<-t.Context().Done() // accepts, never answers
		conn.Close()
	})
	hangsUp := serveLoopback(t, func(conn net.Conn) { conn.Close() })
	cases := []struct {
		address string
		want    string
	}{
		{closed, "(connection refused)"},
		{"nosuchhost.invalid:9092", "(DNS"},
		{silent, "(it accepted the connection but gave no Kafka answer within 500ms)"},
		{hangsUp, "closed the connection"},
	}
	for _, test := range cases {
		target, err := StartTarget(t.Context(), TargetConfig{Kind: TargetBootstrap, Bootstrap: []string{test.address}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = Preflight(t.Context(), target, preflightWorkload(t, 1))
		assertOneLine(t, err, "no Kafka broker answers at "+test.address+" ", test.want,
			"start one (exactly broker --listen 127.0.0.1:9092) or point --bootstrap at a running cluster")
		if elapsed := time.Since(start); elapsed > 3*preflightTimeout {
			t.Errorf("%s: preflight took %v, bound %v", test.address, elapsed, preflightTimeout)
		}
	}
}

// closedLoopbackAddr returns a loopback address that was just listened on
// and closed: nothing listens there.
func closedLoopbackAddr(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	listener.Close()
	return address
}

// serveLoopback accepts connections on a loopback port until the test
// ends, handing each to serve, and returns the address.
func serveLoopback(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); listener.Close() })
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil || ctx.Err() != nil {
				return
			}
			go serve(conn)
		}
	}()
	return listener.Addr().String()
}

// A cluster whose seed answers but whose metadata advertises a broker
// that cannot be reached (advertised.listeners pointing elsewhere) is
// named as such, with the address it advertises.
func TestPreflightNamesUnreachableAdvertisedBroker(t *testing.T) {
	defer func(saved time.Duration) { preflightTimeout = saved }(preflightTimeout)
	preflightTimeout = time.Second
	target := newKfakeTarget(t).(*kfakeTarget)
	closed := closedLoopbackAddr(t)
	host, portText, _ := net.SplitHostPort(closed)
	port, _ := strconv.Atoi(portText)
	target.cluster.ControlKey(int16(kmsg.Metadata), func(request kmsg.Request) (kmsg.Response, error, bool) {
		target.cluster.KeepControl()
		response := request.(*kmsg.MetadataRequest).ResponseKind().(*kmsg.MetadataResponse)
		broker := kmsg.NewMetadataResponseBroker()
		broker.NodeID, broker.Host, broker.Port = 0, host, int32(port)
		response.Brokers = append(response.Brokers, broker)
		response.ControllerID = 0
		return response, nil, true
	})
	err := Preflight(t.Context(), target, preflightWorkload(t, 1))
	assertOneLine(t, err, "kfake at "+target.Bootstrap()[0]+" answered, but the broker it advertises at "+closed+" does not (connection refused)",
		"make the brokers' advertised.listeners reachable from this machine")
}

// A workload on the consumer group protocol needs a cluster that serves
// it: Preflight refuses one without ConsumerGroupHeartbeat v1 (kfake
// advertising Kafka 3.9's versions, where KIP-848 was early access) in
// one line naming the fix, and accepts one with it (kfake as Kafka 4.0).
func TestPreflightRefusesConsumerProtocolWithoutKIP848(t *testing.T) {
	t.Parallel()
	workload := preflightWorkload(t, 1)
	workload.GroupProtocol = GroupProtocolConsumer
	old := newKfakeTarget(t, kfake.MaxVersions(kversion.V3_9_0()))
	assertOneLine(t, Preflight(t.Context(), old, workload), "does not serve the consumer group protocol",
		"ConsumerGroupHeartbeat v1", "--group-protocol classic")
	if err := Preflight(t.Context(), newKfakeTarget(t, kfake.MaxVersions(kversion.V4_0_0())), workload); err != nil {
		t.Fatalf("preflight of kfake as Kafka 4.0: %v", err)
	}
	workload.GroupProtocol = GroupProtocolClassic
	if err := Preflight(t.Context(), old, workload); err != nil {
		t.Fatalf("classic protocol against kfake as Kafka 3.9: %v", err)
	}
}
