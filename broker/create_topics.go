package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// CreateTopics v2–7 creates topics with a partition count (-1: the
// broker's num.partitions), replication factor 1 (or -1: the default), an
// optional replica assignment that must place every partition on this
// broker alone, and topic configs validated against the topic settings
// table (topicSettings; unknown or invalid ones fail with INVALID_CONFIG).
// validate_only checks without creating. From v5 the response carries each
// topic's configs; v7 its id. A cluster member asks the controller instead,
// with any replication factor and no explicit assignment
// (Broker.clusterCreateTopic).
func init() {
	register(wire.APICreateTopics, 2, 7, kmsgHandler(handleCreateTopics))
}

func handleCreateTopics(c *connection, req *kmsg.CreateTopicsRequest) kmsg.Response {
	b := c.broker
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	// Authorization (authorizationRules): Create on the Cluster, or else on
	// each topic; the configs are returned only with DescribeConfigs on it.
	createCluster := c.authorizedCluster(kmsg.ACLOperationCreate)
	for _, rt := range req.Topics {
		if seen[rt.Topic] == 1 && !createCluster && !c.authorizedTopic(kmsg.ACLOperationCreate, rt.Topic) {
			refused := kmsg.NewCreateTopicsResponseTopic()
			refused.Topic = rt.Topic
			refused.ErrorCode, refused.ErrorMessage = errorCode(errTopicAuthorization), errorMessage(errTopicAuthorization)
			resp.Topics = append(resp.Topics, refused)
			continue
		}
		if b.clusterTopics() != nil && seen[rt.Topic] == 1 {
			created, err := b.clusterCreateTopic(b.ctx, rt, req.ValidateOnly)
			created.ErrorCode, created.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Topics = append(resp.Topics, created)
			continue
		}
		created := kmsg.NewCreateTopicsResponseTopic()
		created.Topic = rt.Topic
		var t *topic
		err := error(nil)
		if seen[rt.Topic] > 1 {
			err = fmt.Errorf("%w: topic %s appears more than once", errInvalidRequest, rt.Topic)
		} else {
			var partitions int32
			var overrides map[string]string
			if partitions, overrides, err = b.checkCreateTopic(rt); err == nil {
				t, err = b.createTopic(rt.Topic, partitions, overrides, req.ValidateOnly)
			}
		}
		if err != nil {
			created.ErrorCode, created.ErrorMessage = errorCode(err), errorMessage(err)
		} else {
			created.TopicID = t.id
			created.NumPartitions = int32(len(b.partitionsOf(t)))
			if req.ValidateOnly {
				created.TopicID = [16]byte{}
				created.NumPartitions = rt.NumPartitions
				if len(rt.ReplicaAssignment) > 0 {
					created.NumPartitions = int32(len(rt.ReplicaAssignment))
				} else if rt.NumPartitions == -1 {
					created.NumPartitions = b.config.settings.NumPartitions
				}
			}
			created.ReplicationFactor = 1
			if !c.authorizedTopic(kmsg.ACLOperationDescribeConfigs, rt.Topic) {
				created.ConfigErrorCode = errorCode(errTopicAuthorization)
				resp.Topics = append(resp.Topics, created)
				continue
			}
			for _, entry := range b.describeTopicConfigs(t.config.Load(), func(string) bool { return true }, false, false) {
				config := kmsg.NewCreateTopicsResponseTopicConfig()
				config.Name, config.Value, config.ReadOnly = entry.Name, entry.Value, entry.ReadOnly
				config.Source, config.IsSensitive = int8(entry.Source), entry.IsSensitive
				created.Configs = append(created.Configs, config)
			}
		}
		resp.Topics = append(resp.Topics, created)
	}
	return resp
}

// checkCreateTopic resolves the partition count and config overrides of a
// CreateTopics entry, checking replication and assignment.
func (b *Broker) checkCreateTopic(rt kmsg.CreateTopicsRequestTopic) (int32, map[string]string, error) {
	partitions := rt.NumPartitions
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return 0, nil, fmt.Errorf("%w: give either a replica assignment or partitions and replication factor", errInvalidRequest)
		}
		for i, assignment := range rt.ReplicaAssignment {
			if assignment.Partition != int32(i) {
				return 0, nil, fmt.Errorf("%w: partitions must be numbered 0..%d in order", errInvalidAssignment, len(rt.ReplicaAssignment)-1)
			}
			if err := b.checkReplicas(assignment.Replicas); err != nil {
				return 0, nil, err
			}
		}
		partitions = int32(len(rt.ReplicaAssignment))
	} else {
		if partitions == -1 {
			partitions = b.config.settings.NumPartitions
		}
		if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
			return 0, nil, fmt.Errorf("%w: %d; a single broker serves replication factor 1", errInvalidReplication, rt.ReplicationFactor)
		}
	}
	overrides := map[string]string{}
	for _, config := range rt.Configs {
		if config.Value == nil {
			continue
		}
		overrides[config.Name] = *config.Value
	}
	if err := validateTopicConfigs(overrides); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	return partitions, overrides, nil
}

// checkReplicas accepts a replica list that is exactly this broker.
func (b *Broker) checkReplicas(replicas []int32) error {
	if len(replicas) != 1 || replicas[0] != b.nodeID {
		return fmt.Errorf("%w: replicas %v; this single broker is node %d", errInvalidAssignment, replicas, b.nodeID)
	}
	return nil
}
