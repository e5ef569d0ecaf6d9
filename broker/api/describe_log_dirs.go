package api

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/acl"
	"github.com/exactly-eos/exactly/broker/errcode"
	"github.com/exactly-eos/exactly/wire"
)

// DescribeLogDirs v1-v4 (API 35) describes the broker's log directory
// (it has one: the data directory's broker/) and the partition replicas in
// it, each with its size on disk and offset lag; v4 adds the file
// system's total and usable bytes ([Topics.LogDir]). Null topics means
// every partition; named ones the partitions asked for that are here (an
// absent one is left out, as in Kafka). It needs Describe on the cluster:
// without it, v3+ answer CLUSTER_AUTHORIZATION_FAILED and earlier versions
// an empty list, as Kafka does. kafka-log-dirs.sh and the Kafka UIs read
// partition sizes from it.
func init() {
	register(wire.APIDescribeLogDirs, 1, 4, InReader, describeLogDirs)
}

func describeLogDirs(_ context.Context, r *Request, req *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !r.Auth.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName) {
		if req.Version >= 3 {
			resp.ErrorCode = errcode.Of(errcode.ErrClusterAuthorization)
		}
		return resp
	}
	logDir := r.Topics.LogDir()
	var wanted map[string]map[int32]bool // nil: every partition
	if req.Topics != nil {
		wanted = make(map[string]map[int32]bool, len(req.Topics))
		for _, topic := range req.Topics {
			if wanted[topic.Topic] == nil {
				wanted[topic.Topic] = map[int32]bool{}
			}
			for _, index := range topic.Partitions {
				wanted[topic.Topic][index] = true
			}
		}
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = logDir.Path
	dir.TotalBytes, dir.UsableBytes = logDir.TotalBytes, logDir.UsableBytes
	for _, partition := range logDir.Partitions {
		if wanted != nil && !wanted[partition.Topic][partition.Partition] {
			continue
		}
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != partition.Topic {
			topic := kmsg.NewDescribeLogDirsResponseDirTopic()
			topic.Topic = partition.Topic
			dir.Topics = append(dir.Topics, topic)
		}
		described := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		described.Partition, described.Size, described.OffsetLag = partition.Partition, partition.Size, partition.OffsetLag
		topic := &dir.Topics[len(dir.Topics)-1]
		topic.Partitions = append(topic.Partitions, described)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}
