package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkFetchConsumeTLS consumes the same data over PLAINTEXT
// (sendfile) and SSL (the copy path and encryption), interleaved, and
// reports the broker's CPU per GB consumed each way. The consumer runs in
// a child process (this test binary, TestHelperConsume), so the broker
// process's getrusage counts the broker alone; the child's CPU is reported
// too (client-*), as is each way's throughput.
//
//	go test ./broker/ -run '^$' -bench FetchConsumeTLS -benchtime 2x
func BenchmarkFetchConsumeTLS(b *testing.B) {
	const (
		topic       = "consume-bench"
		recordBytes = 64 << 10
		records     = 1024 // 64 MiB
	)
	pki := newTestPKI(b)
	broker, err := Start(context.Background(), Config{NodeID: 1, DataDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler),
		Properties: pki.sslProperties(map[string]string{"message.max.bytes": strconv.Itoa(2 << 20)})})
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	produceBenchData(b, broker.Addr(), topic, records, recordBytes)
	total := int64(records * recordBytes)

	type side struct {
		name, addr, ca                 string
		brokerCPU, clientCPU, wallTime time.Duration
		bytes                          int64
	}
	sides := []*side{
		{name: "plaintext", addr: broker.ListenerAddr("PLAINTEXT")},
		{name: "ssl", addr: broker.ListenerAddr("SSL"), ca: pki.server.CA},
	}
	copiedBefore, sentBefore := copiedRegionBytes.Load(), sendfileBytes.Load()
	b.ResetTimer()
	for range b.N {
		for _, s := range sides {
			before := processCPU(b)
			start := time.Now()
			clientCPU := runConsumerChild(b, s.addr, s.ca, topic, total)
			s.wallTime += time.Since(start)
			s.brokerCPU += processCPU(b) - before
			s.clientCPU += clientCPU
			s.bytes += total
		}
	}
	b.StopTimer()
	perGB := func(cpu time.Duration, n int64) float64 {
		return cpu.Seconds() * 1000 / (float64(n) / (1 << 30))
	}
	for _, s := range sides {
		b.ReportMetric(perGB(s.brokerCPU, s.bytes), s.name+"-cpu-ms/GB")
		b.ReportMetric(perGB(s.clientCPU, s.bytes), "client-"+s.name+"-cpu-ms/GB")
		b.ReportMetric(float64(s.bytes)/(1<<20)/s.wallTime.Seconds(), s.name+"-MB/s")
	}
	b.ReportMetric(float64(copiedRegionBytes.Load()-copiedBefore)/(1<<20)/float64(b.N), "copied-MB/op")
	b.ReportMetric(float64(sendfileBytes.Load()-sentBefore)/(1<<20)/float64(b.N), "sendfile-MB/op")
}

// produceBenchData writes records of recordBytes to a one-partition topic.
func produceBenchData(b *testing.B, addr, topic string, records, recordBytes int) {
	b.Helper()
	client, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // bytes on the wire = bytes on disk
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	value := make([]byte, recordBytes)
	rand.Read(value)
	results := make(chan error, records)
	for range records {
		client.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) { results <- err })
	}
	for range records {
		if err := <-results; err != nil {
			b.Fatalf("produce: %v", err)
		}
	}
}

// processCPU is this process's user plus system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// runConsumerChild runs TestHelperConsume in a child process against
// addr (TLS when ca is set) until it read want value bytes of topic, and
// returns the child's CPU time.
func runConsumerChild(b *testing.B, addr, ca, topic string, want int64) time.Duration {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperConsume$", "-test.count=1")
	cmd.Env = append(os.Environ(), "EXACTLY_CONSUME_ADDR="+addr, "EXACTLY_CONSUME_CA="+ca,
		"EXACTLY_CONSUME_TOPIC="+topic, "EXACTLY_CONSUME_BYTES="+strconv.FormatInt(want, 10))
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		b.Fatalf("consumer child over %s: %v\n%s", addr, err, output.String())
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// TestHelperConsume is the consumer process of BenchmarkFetchConsumeTLS;
// it skips unless the benchmark started it.
func TestHelperConsume(t *testing.T) {
	addr := os.Getenv("EXACTLY_CONSUME_ADDR")
	if addr == "" {
		t.Skip("consumer child of BenchmarkFetchConsumeTLS only")
	}
	want, err := strconv.ParseInt(os.Getenv("EXACTLY_CONSUME_BYTES"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	topic := os.Getenv("EXACTLY_CONSUME_TOPIC")
	options := []kgo.Opt{kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(64 << 20), kgo.FetchMaxPartitionBytes(16 << 20)}
	if caFile := os.Getenv("EXACTLY_CONSUME_CA"); caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pem)
		options = append(options, kgo.DialTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	}
	client, err := kgo.NewClient(options...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var read int64
	for read < want {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d bytes before the deadline", read, want)
		}
		fetches.EachError(func(topic string, partition int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, partition, err) })
		fetches.EachRecord(func(r *kgo.Record) { read += int64(len(r.Value)) })
	}
}
