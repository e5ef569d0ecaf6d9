package clusternode

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/quorum"
)

// segmentBytesUnder sums the .log files of every directory named
// partitionDir under root.
func segmentBytesUnder(t *testing.T, root, partitionDir string) (total int64, found bool) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a segment swapped away meanwhile
			}
			return err
		}
		if entry.IsDir() || filepath.Base(filepath.Dir(path)) != partitionDir || !strings.HasSuffix(path, ".log") {
			return nil
		}
		found = true
		if info, err := entry.Info(); err == nil {
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total, found
}

// TestInternalTopicsCompactedInCluster: in a cluster the replicated
// __consumer_offsets is created with cleanup.policy=compact, and every
// replica (leader and followers) compacts its copy: a thousand commits of
// one group's offset leave each replica's log small, and the group's
// offset is the last one committed.
func TestInternalTopicsCompactedInCluster(t *testing.T) {
	t.Parallel()
	props := coordinatorProps()
	props["offsets.topic.num.partitions"] = "1"
	props["offsets.topic.segment.bytes"] = "4096"
	props["log.cleaner.backoff.ms"] = "50"
	props["log.cleaner.delete.retention.ms"] = "0"
	props["log.cleaner.min.cleanable.ratio"] = "0.01"
	c := newTestCluster(t, 3, props)
	c.waitMetadata(3, "", 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createTopic(t, cl, "data", 1, 3)
	c.waitMetadata(3, "data", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("data")}}
	described, err := metadata.RequestWith(ctx, cl)
	if err != nil || len(described.Topics) != 1 {
		t.Fatalf("metadata of data: %v %+v", err, described)
	}
	topicID := described.Topics[0].TopicID
	const commits = 1000
	for offset := range int64(commits) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "compacted", -1
		partition := kmsg.NewOffsetCommitRequestTopicPartition()
		partition.Partition, partition.Offset = 0, offset
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "data", TopicID: topicID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{partition}}}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("commit %d: %v", offset, err)
		}
	}
	image := c.waitImage("__consumer_offsets in the image", func(img *quorum.Image) bool {
		_, ok := img.Topic("__consumer_offsets")
		return ok
	})
	if topic, _ := image.Topic("__consumer_offsets"); topic.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("__consumer_offsets configs %v, want cleanup.policy=compact", topic.Configs)
	}
	// Uncompacted, the log holds 115 kB (seen with the cleaner off); each
	// compacted replica keeps its active segment, the sealed ones not yet
	// past its recovery point (storage cleans no further) and a few bytes.
	const bound = 4 * 4096
	deadline := time.Now().Add(30 * time.Second)
	for id, dir := range c.dirs {
		for {
			size, found := segmentBytesUnder(t, dir, "__consumer_offsets-0")
			if found && size <= bound {
				t.Logf("member %d: __consumer_offsets-0 holds %d bytes of segments", id, size)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d: __consumer_offsets-0 holds %d bytes of segments (found %v), want at most %d", id, size, found, bound)
			}
			time.Sleep(50 * time.Millisecond) // polling interval of a bounded wait
		}
	}
	if got := committedOffsets(t, c.bootstrap(), "compacted", "data"); got[0] != commits-1 {
		t.Fatalf("committed offsets %v, want %d", got, commits-1)
	}
}
