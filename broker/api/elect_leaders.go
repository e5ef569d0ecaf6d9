package api

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// ElectLeaders v0–2 (API 43, KIP-460) elects partition leaders through
// the controller ([Admin.ElectLeader]). Election type 0 (preferred, the
// only one of v0) makes each partition's first replica its leader when it
// is in the ISR and unfenced (PREFERRED_LEADER_NOT_AVAILABLE otherwise,
// ELECTION_NOT_NEEDED when it leads already); type 1 (unclean) gives a
// leaderless partition any live replica, in the ISR or not — records only
// the old ISR held may be lost, which is what the operator asks for.
// Null topics means every partition; then, as in Kafka, partitions that
// needed no election are left out of the answer. It needs Alter on the
// cluster.
func init() {
	register(wire.APIElectLeaders, 0, 2, Parks, electLeaders)
}

func electLeaders(_ context.Context, r *Request, req *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if !r.AuthorizedCluster(kmsg.ACLOperationAlter) {
		resp.ErrorCode = errcode.Of(errcode.ErrClusterAuthorization)
		return resp
	}
	var unclean bool
	switch req.ElectionType {
	case 0:
	case 1:
		unclean = true
	default:
		resp.ErrorCode = errcode.Of(errcode.ErrInvalidRequest)
		return resp
	}
	topics, all := req.Topics, req.Topics == nil
	if all {
		for _, mt := range r.Cluster.AllTopics() {
			if mt.Topic == nil {
				continue
			}
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = *mt.Topic
			for _, mp := range mt.Partitions {
				rt.Partitions = append(rt.Partitions, mp.Partition)
			}
			topics = append(topics, rt)
		}
	}
	for _, rt := range topics {
		answered := kmsg.NewElectLeadersResponseTopic()
		answered.Topic = rt.Topic
		for _, partition := range rt.Partitions {
			err := r.Admin.ElectLeader(rt.Topic, partition, unclean)
			if all && errcode.Of(err) == kerr.ElectionNotNeeded.Code {
				continue
			}
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = partition
			rp.ErrorCode, rp.ErrorMessage = errcode.Of(err), errcode.Message(err)
			if err != nil {
				r.Logger.Debug("elect leader", "topic", rt.Topic, "partition", partition, "unclean", unclean, "error", fmt.Sprint(err))
			}
			answered.Partitions = append(answered.Partitions, rp)
		}
		if len(answered.Partitions) > 0 {
			resp.Topics = append(resp.Topics, answered)
		}
	}
	return resp
}
