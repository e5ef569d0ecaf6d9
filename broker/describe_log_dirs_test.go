package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeLogDirs lists the broker's log directory with every partition's
// size on disk (what kafka-log-dirs.sh and the Kafka UIs show), only the
// partitions asked for when topics are named, and the file system's size
// and free space at v4.
func TestDescribeLogDirs(t *testing.T) {
	t.Parallel()
	b := startTestBroker(t, t.TempDir(), nil)
	client, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("dirs"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	createTopic(t, client, "dirs", 2, nil)
	ctx := testContext(t, 10*time.Second)
	for range 10 {
		if err := client.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: make([]byte, 1000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	describe := func(topics []kmsg.DescribeLogDirsRequestTopic) *kmsg.DescribeLogDirsResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version, req.Topics = 4, topics
		// To the broker itself: kgo's RequestWith would send it to every
		// broker and merge the answers.
		answer, err := client.Broker(1).Request(ctx, req)
		resp, _ := answer.(*kmsg.DescribeLogDirsResponse)
		if err != nil || resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
			t.Fatalf("describe log dirs: %+v, %v", resp, err)
		}
		return resp
	}
	sizes := func(resp *kmsg.DescribeLogDirsResponse) map[int32]int64 {
		out := map[int32]int64{}
		for _, topic := range resp.Dirs[0].Topics {
			if topic.Topic == "dirs" {
				for _, p := range topic.Partitions {
					out[p.Partition] = p.Size
				}
			}
		}
		return out
	}
	all := describe(nil)
	if dir := all.Dirs[0]; dir.Dir == "" || dir.TotalBytes <= 0 || dir.UsableBytes <= 0 || dir.UsableBytes > dir.TotalBytes {
		t.Errorf("dir %q total %d usable %d", dir.Dir, dir.TotalBytes, dir.UsableBytes)
	}
	if got := sizes(all); len(got) != 2 || got[0] != 0 || got[1] < 10*1000 {
		t.Errorf("sizes of dirs' partitions %v, want 0 and at least 10,000 bytes", got)
	}
	one := kmsg.NewDescribeLogDirsRequestTopic()
	one.Topic, one.Partitions = "dirs", []int32{1}
	if got := sizes(describe([]kmsg.DescribeLogDirsRequestTopic{one})); len(got) != 1 || got[1] < 10*1000 {
		t.Errorf("asked for dirs-1 only: %v", got)
	}
}
