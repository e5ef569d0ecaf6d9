package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// AlterPartitionReassignments v0–1 (API 45, KIP-455) moves partitions to
// new replica sets through the controller ([Admin.AlterReassignment]): the
// new replicas copy the partition from its leader and join the ISR, and
// only then do the replicas not in the target leave (a leader not in the
// target hands over to the first in-sync target replica). A partition
// with null replicas cancels its reassignment in progress
// (NO_REASSIGNMENT_IN_PROGRESS when there is none). v1's
// AllowReplicationFactorChange false refuses a target of another size
// (KIP-860). Each partition answers once the controller accepted it; the
// copy goes on in the background (ListPartitionReassignments shows it).
// It needs Alter on the cluster (else CLUSTER_AUTHORIZATION_FAILED for the
// whole request), as in Kafka.
func init() {
	register(wire.APIAlterPartitionAssignments, 0, 1, Parks, alterPartitionReassignments)
}

func alterPartitionReassignments(_ context.Context, r *Request, req *kmsg.AlterPartitionAssignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	allowChange := req.Version < 1 || req.AllowReplicationFactorChange
	if !r.AuthorizedCluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(errcode.ErrClusterAuthorization), errcode.Message(errcode.ErrClusterAuthorization)
		return resp
	}
	for _, rt := range req.Topics {
		answered := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		answered.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			result := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			result.Partition = rp.Partition
			err := r.Admin.AlterReassignment(rt.Topic, rp.Partition, rp.Replicas, allowChange)
			result.ErrorCode, result.ErrorMessage = errcode.Of(err), errcode.Message(err)
			if err != nil {
				r.Logger.Debug("alter partition reassignment", "topic", rt.Topic, "partition", rp.Partition, "replicas", rp.Replicas, "error", err)
			}
			answered.Partitions = append(answered.Partitions, result)
		}
		resp.Topics = append(resp.Topics, answered)
	}
	return resp
}
