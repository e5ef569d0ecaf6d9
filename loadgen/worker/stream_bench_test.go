package worker

import (
	"io"
	"testing"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// BenchmarkReportStream is what a load worker spends per record on its
// reports to the runner: protocol 2's record stream (the sent and ack ops
// of each record, taken and compressed in batches of 10,000 records, about
// 100 ms at 100,000 records/s, and written as frames) beside protocol 1's
// JSON event per send and per ack. 4 producers interleave their records
// over 16 partitions, as a saturated worker's do. Divide ns/record by the
// worker's CPU per record at saturation (the results' cpu_seconds over
// acknowledged) for the stream's share of the worker's CPU.
func BenchmarkReportStream(b *testing.B) {
	const producers, partitions, batch = 4, 16, 10_000
	ack := func(record uint64) verify.Ack {
		return verify.Ack{Partition: int32(record % partitions), Offset: int64(record / partitions),
			Writer: verify.Writer{TransactionalID: "exactly-run-p0", ProducerID: 1000 + int64(record%producers), ProducerEpoch: 0}}
	}
	b.Run("protocol=2-record-batches", func(b *testing.B) {
		reporter := NewReporter(io.Discard)
		stream := NewRecordStream()
		logs := make([]RecordLog, producers)
		for index := range logs {
			logs[index] = stream.Producer(uint32(index))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for record := range uint64(b.N) {
			log := logs[record%producers]
			seq := record / producers
			_ = log.RecordSent(seq, verify.FateCommit)
			log.RecordAcknowledged(seq, ack(record))
			if record%batch == batch-1 {
				reporter.Records(stream.Take())
			}
		}
		reporter.Records(stream.Take())
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
		b.ReportMetric(float64(reporter.streamBytes)/float64(b.N), "wire-bytes/record")
	})
	b.Run("protocol=1-json-events", func(b *testing.B) {
		reporter := NewReporter(io.Discard)
		b.ReportAllocs()
		b.ResetTimer()
		for record := range uint64(b.N) {
			seq := record / producers
			_ = reporter.RecordSent(seq, verify.FateCommit)
			reporter.RecordAcknowledged(seq, ack(record))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
		b.ReportMetric(float64(reporter.streamBytes)/float64(b.N), "wire-bytes/record")
	})
}
