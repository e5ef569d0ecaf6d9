package api

import (
	"log/slog"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/errcode"
)

// Request is what a handler sees of the connection a request came on and
// of the broker. The broker builds one per connection; handlers only read
// it.
type Request struct {
	// Auth authorizes the connection's principal from its host.
	Auth Authorizer
	// Listener is the name of the listener the connection came in on
	// (clients are told the addresses advertised for it); empty for the
	// broker's single plain listener.
	Listener string
	// Logger logs with the connection's attributes.
	Logger *slog.Logger
	// Closed is closed when the connection ends (a handler's ctx ends
	// with its request); share sessions end with it.
	Closed <-chan struct{}
	// Services are the broker's parts a handler may use.
	*Services
}

// Authorizer answers Kafka's authorization questions for one connection's
// principal and host (package acl decides; without an authorizer
// configured every question is answered yes).
type Authorizer interface {
	// Authorized reports whether op on the resource rt named name is
	// allowed.
	Authorized(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
	// AuthorizedOnAnyTopic reports whether op is allowed on at least one
	// topic (Kafka's authorizeByResourceType).
	AuthorizedOnAnyTopic(op kmsg.ACLOperation) bool
	// Enabled reports whether an authorizer is configured at all; without
	// one, handlers may skip filtering work.
	Enabled() bool
	// Principal is the connection's principal ("User:alice";
	// User:ANONYMOUS unauthenticated), for the logs of administrative
	// changes.
	Principal() string
}

// AuthorizedCluster is Authorized on the Cluster resource.
func (r *Request) AuthorizedCluster(op kmsg.ACLOperation) bool {
	return r.Auth.Authorized(op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// AuthorizedTopic is Authorized on a topic.
func (r *Request) AuthorizedTopic(op kmsg.ACLOperation, name string) bool {
	return r.Auth.Authorized(op, kmsg.ACLResourceTypeTopic, name)
}

// AuthorizedGroup is Authorized on a group.
func (r *Request) AuthorizedGroup(op kmsg.ACLOperation, name string) bool {
	return r.Auth.Authorized(op, kmsg.ACLResourceTypeGroup, name)
}

// AuthorizedTransactionalID is Authorized on a transactional id.
func (r *Request) AuthorizedTransactionalID(op kmsg.ACLOperation, id string) bool {
	return r.Auth.Authorized(op, kmsg.ACLResourceTypeTransactionalId, id)
}

// MayCreateTopic is Kafka's check before creating a topic (CreateTopics,
// and the auto-creation of Metadata and Produce): Create on the cluster,
// or else Create on the topic.
func (r *Request) MayCreateTopic(name string) bool {
	return r.AuthorizedCluster(kmsg.ACLOperationCreate) || r.AuthorizedTopic(kmsg.ACLOperationCreate, name)
}

// TopicRefused reports whether op on a topic a request names by name or,
// when byID, by id is refused. An id that names no topic is not refused
// here: the handler answers UNKNOWN_TOPIC_ID for it.
func (r *Request) TopicRefused(op kmsg.ACLOperation, name string, id [16]byte, byID bool) bool {
	if !r.Auth.Enabled() {
		return false
	}
	if byID {
		known, ok := r.Topics.NameByID(id)
		if !ok {
			return false
		}
		name = known
	}
	return !r.AuthorizedTopic(op, name)
}

// ConfigResourceRefusal is Kafka's authorization of a DescribeConfigs,
// AlterConfigs or IncrementalAlterConfigs resource (op is DescribeConfigs
// or AlterConfigs): broker resources need op on the Cluster
// (CLUSTER_AUTHORIZATION_FAILED), topics op on the topic
// (TOPIC_AUTHORIZATION_FAILED), groups op on the group
// (GROUP_AUTHORIZATION_FAILED). Other types pass here; the handler
// refuses them as it always has.
func (r *Request) ConfigResourceRefusal(rt kmsg.ConfigResourceType, name string, op kmsg.ACLOperation) error {
	switch rt {
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !r.AuthorizedCluster(op) {
			return errcode.ErrClusterAuthorization
		}
	case kmsg.ConfigResourceTypeTopic:
		if !r.AuthorizedTopic(op, name) {
			return errcode.ErrTopicAuthorization
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !r.AuthorizedGroup(op, name) {
			return errcode.ErrGroupAuthorization
		}
	}
	return nil
}
