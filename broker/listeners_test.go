package broker

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dialRawAt is dialRaw to a given address (one of the broker's listeners).
func dialRawAt(t *testing.T, addr string) *rawConnection {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConnection{t: t, conn: conn}
}

// advertisedAnswers asks Metadata, FindCoordinator and DescribeCluster
// over conn and returns the host:port each names this broker at.
func advertisedAnswers(t *testing.T, r *rawConnection) (metadata, coordinator, cluster string) {
	t.Helper()
	r.request(kmsg.NewPtrMetadataRequest(), 12)
	metadataResp := kmsg.NewPtrMetadataResponse()
	r.response(metadataResp, 12)
	if len(metadataResp.Brokers) != 1 {
		t.Fatalf("metadata brokers %+v", metadataResp.Brokers)
	}
	findReq := kmsg.NewPtrFindCoordinatorRequest()
	findReq.CoordinatorKeys = []string{"g"}
	r.request(findReq, 4)
	findResp := kmsg.NewPtrFindCoordinatorResponse()
	r.response(findResp, 4)
	if len(findResp.Coordinators) != 1 || findResp.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("find coordinator %+v", findResp.Coordinators)
	}
	r.request(kmsg.NewPtrDescribeClusterRequest(), 0)
	clusterResp := kmsg.NewPtrDescribeClusterResponse()
	r.response(clusterResp, 0)
	if len(clusterResp.Brokers) != 1 {
		t.Fatalf("describe cluster brokers %+v", clusterResp.Brokers)
	}
	join := func(host string, port int32) string { return net.JoinHostPort(host, strconv.Itoa(int(port))) }
	return join(metadataResp.Brokers[0].Host, metadataResp.Brokers[0].Port),
		join(findResp.Coordinators[0].Host, findResp.Coordinators[0].Port),
		join(clusterResp.Brokers[0].Host, clusterResp.Brokers[0].Port)
}

// Two listeners, no advertised.listeners: a franz-go client seeded at
// each sees its own listener's address in Metadata, FindCoordinator and
// DescribeCluster, and produces and consumes through it.
func TestListenersEachAdvertiseTheirOwnAddress(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,internal://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
	})
	external, internal := b.ListenerAddr("PLAINTEXT"), b.ListenerAddr("Internal")
	if external == "" || internal == "" || external == internal || b.Addr() != external {
		t.Fatalf("listener addresses: PLAINTEXT %q, INTERNAL %q, Addr %q", external, internal, b.Addr())
	}
	if b.ListenerAddr("SSL") != "" {
		t.Fatal("ListenerAddr of a listener that does not exist is not empty")
	}
	ctx := testContext(t, 30*time.Second)
	for i, addr := range []string{external, internal} {
		topic := "via-listener-" + strconv.Itoa(i)
		client, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(),
			kgo.ConsumeTopics(topic), kgo.AllowAutoTopicCreation())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, client)
		if err != nil {
			t.Fatalf("metadata via %s: %v", addr, err)
		}
		if got := net.JoinHostPort(resp.Brokers[0].Host, strconv.Itoa(int(resp.Brokers[0].Port))); got != addr {
			t.Fatalf("client of %s was told to connect to %s", addr, got)
		}
		if err := client.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(addr)}).FirstErr(); err != nil {
			t.Fatalf("produce via %s: %v", addr, err)
		}
		fetches := client.PollRecords(ctx, 1)
		if err := fetches.Err(); err != nil {
			t.Fatalf("consume via %s: %v", addr, err)
		}
		if records := fetches.Records(); len(records) != 1 || string(records[0].Value) != addr {
			t.Fatalf("consumed via %s: %+v", addr, records)
		}
		metadata, coordinator, cluster := advertisedAnswers(t, dialRawAt(t, addr))
		if metadata != addr || coordinator != addr || cluster != addr {
			t.Fatalf("via %s: metadata %s, coordinator %s, cluster %s", addr, metadata, coordinator, cluster)
		}
	}
}

// advertised.listeners changes what one listener advertises; the other
// keeps its own address. Connections take their listener's protocol: a
// SASL_PLAINTEXT listener accepts plain TCP.
func TestAdvertisedListenersPerListener(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"advertised.listeners":           "REPLICATION://broker-1.example:19093",
	})
	metadata, coordinator, cluster := advertisedAnswers(t, dialRawAt(t, b.ListenerAddr("REPLICATION")))
	for _, got := range []string{metadata, coordinator, cluster} {
		if got != "broker-1.example:19093" {
			t.Fatalf("REPLICATION advertises metadata %s, coordinator %s, cluster %s; want broker-1.example:19093", metadata, coordinator, cluster)
		}
	}
	plain := b.ListenerAddr("PLAINTEXT")
	if metadata, _, _ := advertisedAnswers(t, dialRawAt(t, plain)); metadata != plain {
		t.Fatalf("PLAINTEXT advertises %s, want its own %s", metadata, plain)
	}

	sasl := dialRawAt(t, b.ListenerAddr("SASL_PLAINTEXT"))
	sasl.request(kmsg.NewPtrApiVersionsRequest(), 3)
	versions := kmsg.NewPtrApiVersionsResponse()
	sasl.response(versions, 3)
	if versions.ErrorCode != 0 || len(versions.ApiKeys) == 0 {
		t.Fatalf("ApiVersions on the SASL_PLAINTEXT listener: %+v", versions)
	}
	protocols := map[string]SecurityProtocol{}
	b.connsMu.Lock()
	for c := range b.conns {
		protocols[c.listener.name] = c.protocol
	}
	b.connsMu.Unlock()
	want := map[string]SecurityProtocol{"PLAINTEXT": Plaintext, "REPLICATION": Plaintext, "SASL_PLAINTEXT": SASLPlaintext}
	for name, protocol := range want {
		if got, ok := protocols[name]; !ok || got != protocol {
			t.Errorf("connection on %s: protocol %v (present %v), want %v", name, got, ok, protocol)
		}
	}
}

// Without the listeners setting the broker is one PLAINTEXT listener on
// Config.Listen advertising Config.Advertised, as before listeners.
func TestListenersUnsetKeepsConfigListen(t *testing.T) {
	t.Parallel()
	b, err := Start(context.Background(), Config{NodeID: 1, Listen: "127.0.0.1:0", Advertised: "kafka.example:9092", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.ListenerAddr("plaintext") != b.Addr() || b.AdvertisedAddr() != "kafka.example:9092" {
		t.Fatalf("ListenerAddr %q, Addr %q, AdvertisedAddr %q", b.ListenerAddr("plaintext"), b.Addr(), b.AdvertisedAddr())
	}
	if metadata, _, _ := advertisedAnswers(t, dialRawAt(t, b.Addr())); metadata != "kafka.example:9092" {
		t.Fatalf("metadata advertises %s", metadata)
	}
}

// Bad listener settings are start errors that say what is wrong.
func TestListenerSettingErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		properties map[string]string
		advertised string
		want       string
	}{
		{"no scheme", map[string]string{"listeners": "127.0.0.1:9092"}, "", "want NAME://host:port"},
		{"bad port", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:70000"}, "", "not 0–65535"},
		{"name twice", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,plaintext://127.0.0.1:0"}, "", "given twice"},
		{"unmapped name", map[string]string{"listeners": "EXTERNAL://127.0.0.1:0"}, "", "no security protocol"},
		{"bad protocol", map[string]string{"listener.security.protocol.map": "EXTERNAL:TLS"}, "", "unknown security protocol"},
		{"same port", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:19092,SSL://127.0.0.1:19092"}, "", "both use port 19092"},
		{"advertised unknown", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "SSL://h:1"}, "", "not one of listeners"},
		{"advertised unspecified", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "", "clients can reach"},
		{"advertised alone", map[string]string{"advertised.listeners": "PLAINTEXT://h:1"}, "", "without listeners"},
		{"Config.Advertised too", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0"}, "h:1", "use advertised.listeners"},
		{"keystore JKS", map[string]string{"ssl.keystore.type": "JKS"}, "", "only PEM"},
		{"client auth", map[string]string{"ssl.client.auth": "yes"}, "", "none, requested or required"},
		{"listener setting of no listener", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0",
			"listener.name.ssl.ssl.client.auth": "required"}, "", "no listener is named ssl"},
		{"listener setting not ssl", map[string]string{"listener.name.ssl.max.connections": "3"}, "", "unknown setting"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", Advertised: tc.advertised, DataDir: t.TempDir(), Properties: tc.properties})
			if err == nil {
				b.Close()
				t.Fatalf("started; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}
