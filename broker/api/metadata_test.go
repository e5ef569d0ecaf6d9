package api

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeCluster describes two topics, "events" and "audit".
type fakeCluster struct{}

func (fakeCluster) ClusterID() string   { return "c" }
func (fakeCluster) ControllerID() int32 { return 1 }
func (fakeCluster) Brokers(string) []kmsg.MetadataResponseBroker {
	broker := kmsg.NewMetadataResponseBroker()
	broker.NodeID, broker.Host, broker.Port = 1, "127.0.0.1", 9092
	return []kmsg.MetadataResponseBroker{broker}
}
func (c fakeCluster) AllTopics() []kmsg.MetadataResponseTopic {
	return []kmsg.MetadataResponseTopic{c.Topic("audit", false), c.Topic("events", false)}
}
func (fakeCluster) Topic(name string, _ bool) kmsg.MetadataResponseTopic {
	topic := kmsg.NewMetadataResponseTopic()
	topic.Topic = kmsg.StringPtr(name)
	return topic
}
func (fakeCluster) TopicByID([16]byte) (kmsg.MetadataResponseTopic, string, bool) {
	return kmsg.NewMetadataResponseTopic(), "", false
}
func (fakeCluster) AutoCreates(string) bool { return false }
func (fakeCluster) Coordinator(context.Context, string, int8, string) (int32, string, int32, error) {
	return -1, "", 0, nil
}

// Metadata includes the authorized operations a request asks for
// (KIP-430): per topic, the bit field of what the principal may do on it;
// for the cluster on v8 to v10; every supported operation without an
// authorizer; Kafka's "omitted" value when not asked.
func TestMetadataAuthorizedOperations(t *testing.T) {
	t.Parallel()
	bit := func(ops ...kmsg.ACLOperation) int32 {
		var bits int32
		for _, op := range ops {
			bits |= 1 << uint(op)
		}
		return bits
	}
	readOnEvents := func(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
		switch rt {
		case kmsg.ACLResourceTypeTopic:
			return name == "events" && (op == kmsg.ACLOperationDescribe || op == kmsg.ACLOperationRead)
		case kmsg.ACLResourceTypeCluster:
			return op == kmsg.ACLOperationIdempotentWrite
		}
		return false
	}
	everyTopicOperation := bit(topicOperations...)
	cases := []struct {
		name         string
		auth         fakeAuth
		version      int16
		include      bool
		wantTopic    int32
		wantCluster  int32
		topicsListed int
	}{
		{"not asked", fakeAuth{enabled: true, allowed: readOnEvents}, 10, false, authorizedOperationsOmitted, authorizedOperationsOmitted, 1},
		{"asked, with ACLs", fakeAuth{enabled: true, allowed: readOnEvents}, 10, true,
			bit(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe), bit(kmsg.ACLOperationIdempotentWrite), 1},
		{"asked, no authorizer", fakeAuth{enabled: false}, 9, true, everyTopicOperation, bit(clusterOperations...), 2},
		{"asked on v12: no cluster field", fakeAuth{enabled: false}, 12, true, everyTopicOperation, authorizedOperationsOmitted, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &Request{Auth: c.auth, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Services: &Services{Cluster: fakeCluster{}}}
			req := kmsg.NewPtrMetadataRequest()
			req.Version = c.version
			req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = c.include, c.include
			resp := serve(t, r, req).(*kmsg.MetadataResponse)
			if len(resp.Topics) != c.topicsListed {
				t.Fatalf("%d topics listed, want %d", len(resp.Topics), c.topicsListed)
			}
			for _, topic := range resp.Topics {
				if *topic.Topic == "events" && topic.AuthorizedOperations != c.wantTopic {
					t.Errorf("events: authorized operations %b, want %b", topic.AuthorizedOperations, c.wantTopic)
				}
			}
			if resp.AuthorizedOperations != c.wantCluster {
				t.Errorf("cluster: authorized operations %b, want %b", resp.AuthorizedOperations, c.wantCluster)
			}
		})
	}
}
