package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// ListPartitionReassignments v0 (API 46, KIP-455) lists the reassignments
// in progress ([Admin.Reassignments]) — of every partition when topics is
// null, else of the named partitions that have one — with each
// partition's current replicas, the replicas being added and those being
// removed. It answers from the metadata this broker has applied, which
// may trail the controller's by a moment after a move was accepted
// elsewhere (a tool that waits for the end also checks the replicas in
// Metadata, as `exactly cluster drain` does). It needs Describe on the
// cluster.
func init() {
	register(wire.APIListPartitionReassignments, 0, 0, InReader, listPartitionReassignments)
}

func listPartitionReassignments(_ context.Context, r *Request, req *kmsg.ListPartitionReassignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !r.AuthorizedCluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(errcode.ErrClusterAuthorization), errcode.Message(errcode.ErrClusterAuthorization)
		return resp
	}
	var wanted map[string][]int32
	if req.Topics != nil {
		wanted = map[string][]int32{}
		for _, rt := range req.Topics {
			wanted[rt.Topic] = append(wanted[rt.Topic], rt.Partitions...)
		}
	}
	for _, ra := range r.Admin.Reassignments(wanted) {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != ra.Topic {
			topic := kmsg.NewListPartitionReassignmentsResponseTopic()
			topic.Topic = ra.Topic
			resp.Topics = append(resp.Topics, topic)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition, rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = ra.Partition, ra.Replicas, ra.AddingReplicas, ra.RemovingReplicas
		last := &resp.Topics[len(resp.Topics)-1]
		last.Partitions = append(last.Partitions, rp)
	}
	return resp
}
