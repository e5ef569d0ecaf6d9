package broker

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/broker/metrics"
)

// BenchmarkProduceMetrics: one op is one 1 KiB record produced with
// acks=all by an idempotent producer and acknowledged (ProduceSync, one
// at a time: one Produce request per op), against a broker with metrics
// off and on. allocs/op of metrics=off is the request path's cost when
// Config.Metrics is nil (compare with the code before metrics existed).
func BenchmarkProduceMetrics(b *testing.B) {
	b.Run("metrics=off", func(b *testing.B) { benchProduceRequests(b, nil) })
	b.Run("metrics=on", func(b *testing.B) { benchProduceRequests(b, metrics.New()) })
}

func benchProduceRequests(b *testing.B, m *metrics.Broker) {
	server, err := Start(context.Background(), Config{NodeID: 1, Listen: "127.0.0.1:0", DataDir: b.TempDir(), Metrics: m})
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	client, err := kgo.NewClient(kgo.SeedBrokers(server.Addr()), kgo.DefaultProduceTopic("bench-metrics"),
		kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	value := make([]byte, 1024)
	if err := client.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := client.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
}
