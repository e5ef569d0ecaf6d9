// Package metrics holds the broker's Prometheus collectors: one
// *Broker value owning a private registry with every exactly_* metric,
// the Go runtime and process collectors, and the scrape-time collector
// of per-partition log figures (log end offset, segments, size, LSO
// lag) and per-group member counts. It imports only client_golang and
// the standard library; the broker calls into it (a nil *Broker means
// metrics are off, and every call site checks for nil first), and
// broker/storage reports fsyncs through its own hook, never through
// this package.
//
// Each metric's doc comment names the Kafka JMX metric it stands for.
// Units: seconds and bytes; histograms are classic (explicit buckets).
// Which per-API request-time series have buckets is a setting
// ([RequestHistograms], [Broker.SetRequestHistograms]).
// The HTTP side (/metrics, /healthz, /readyz) is [Handler] and [Serve].
package metrics

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// latencyBuckets are the request-time histogram buckets, in seconds:
// 50 µs to ~26 s, doubling.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 20)

// fsyncBuckets are the fsync histogram buckets: 10 µs to ~5 s, doubling.
var fsyncBuckets = prometheus.ExponentialBuckets(10e-6, 2, 20)

// maxAPIKey bounds the API keys cached by API; larger keys are not
// cached (they still count, through a slower lookup).
const maxAPIKey = 128

// Broker is the set of broker metrics. Create it with New; share one
// per broker process. Safe for concurrent use.
type Broker struct {
	registry *prometheus.Registry

	// Requests (Kafka's kafka.network:type=RequestMetrics).
	requests       *prometheus.CounterVec // exactly_requests_total{api}
	requestErrors  *prometheus.CounterVec // exactly_request_errors_total{api,error}
	queueSeconds   *requestFamily         // exactly_request_queue_seconds{api}
	localSeconds   *requestFamily         // exactly_request_local_seconds{api}
	durabilitySecs *requestFamily         // exactly_request_durability_wait_seconds{api="Produce"}
	sendSeconds    *requestFamily         // exactly_request_send_seconds{api}
	totalSeconds   *requestFamily         // exactly_request_total_seconds{api}
	apis           [maxAPIKey]atomic.Pointer[API]
	apisMu         sync.Mutex             // API's slow path and SetRequestHistograms
	histograms     RequestHistograms      // which request-time series have buckets (SetRequestHistograms)
	topicBytesIn   *prometheus.CounterVec // exactly_topic_bytes_in_total{topic}
	topicBytesOut  *prometheus.CounterVec // exactly_topic_bytes_out_total{topic}
	produceBatches *prometheus.CounterVec // exactly_produce_batches_total{topic}
	produceRecords *prometheus.CounterVec // exactly_produce_records_total{topic}
	topicsMu       sync.Mutex
	topics         map[string]*Topic
	duplicates     prometheus.Counter // exactly_idempotent_duplicates_total
	outOfOrder     prometheus.Counter // exactly_out_of_order_sequences_total
	txnBegun       prometheus.Counter
	txnCommitted   prometheus.Counter
	txnAborted     prometheus.Counter
	txnTimedOut    prometheus.Counter
	markersWritten prometheus.Counter
	endTxnSeconds  prometheus.Histogram
	rebalances     prometheus.Counter
	shareRecords   *prometheus.CounterVec // exactly_share_records_total{event}
	offsetsCommit  prometheus.Counter
	fsyncs         prometheus.Counter
	fsyncSeconds   prometheus.Histogram
	cleanerRuns    prometheus.Counter
	cleanerRead    prometheus.Counter
	cleanerWritten prometheus.Counter
	cleanerRemoved prometheus.Counter
	cleanerFailed  prometheus.Counter
	connsOpened    prometheus.Counter
	connsClosed    prometheus.Counter
	connsRefused   prometheus.Counter
	connsOpen      prometheus.Gauge
	isrShrinks     prometheus.Counter
	isrExpands     prometheus.Counter
	state          *stateCollector
}

// API is the request metrics of one Kafka API, resolved once so the
// request path does no label lookup. Get it from Broker.API.
type API struct {
	// Requests counts requests received (Kafka's RequestsPerSec).
	Requests prometheus.Counter
	// Queue observes frame read → handler start (RequestQueueTimeMs).
	Queue prometheus.Observer
	// Local observes handler time excluding the durability wait
	// (LocalTimeMs).
	Local prometheus.Observer
	// Durability observes the wait for fsync or the ISR (RemoteTimeMs);
	// kept for Produce only, the one API that waits.
	Durability prometheus.Observer
	// Send observes response encode and write (ResponseQueueTimeMs +
	// ResponseSendTimeMs).
	Send prometheus.Observer
	// Total observes all of the above (TotalTimeMs).
	Total prometheus.Observer

	name   string
	errors *prometheus.CounterVec
}

// Error counts one non-zero error code in a response of this API
// (Kafka's ErrorsPerSec{request,error}); name is the Kafka error name.
func (a *API) Error(name string) { a.errors.WithLabelValues(a.name, name).Inc() }

// Topic is the per-topic data metrics, resolved once per topic. Get it
// from Broker.Topic.
type Topic struct {
	// BytesIn counts produced record-batch bytes appended
	// (BrokerTopicMetrics BytesInPerSec{topic}).
	BytesIn prometheus.Counter
	// BytesOut counts record-batch bytes sent to consumers
	// (BytesOutPerSec{topic}).
	BytesOut prometheus.Counter
	// Batches counts produced record batches appended.
	Batches prometheus.Counter
	// Records counts produced records appended (MessagesInPerSec{topic}).
	Records prometheus.Counter
}

// New returns the broker metrics registered in a fresh registry, with
// the Go runtime and process collectors.
func New() *Broker {
	m := &Broker{registry: prometheus.NewRegistry(), topics: map[string]*Topic{}}
	r := m.registry
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		r.MustRegister(c)
		return c
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		r.MustRegister(c)
		return c
	}
	latency := func(name, help string, stage bool) *requestFamily {
		f := newRequestFamily(name, help, stage)
		r.MustRegister(f)
		return f
	}
	m.requests = counterVec("exactly_requests_total", "Requests received, per Kafka API (Kafka: RequestMetrics RequestsPerSec).", "api")
	m.requestErrors = counterVec("exactly_request_errors_total", "Non-zero error codes in responses, per API and Kafka error name (Kafka: RequestMetrics ErrorsPerSec).", "api", "error")
	m.queueSeconds = latency("exactly_request_queue_seconds", "Time from a request's frame read to its handler's start (Kafka: RequestQueueTimeMs).", true)
	m.localSeconds = latency("exactly_request_local_seconds", "Handler time excluding the durability wait; includes a Fetch long poll (Kafka: LocalTimeMs).", true)
	m.durabilitySecs = latency("exactly_request_durability_wait_seconds", "Time a Produce waited for fsync and the ISR (acks=all); 0 for a Produce that does not wait; no other API waits (Kafka: RemoteTimeMs).", true)
	m.sendSeconds = latency("exactly_request_send_seconds", "Time from response encode start to the response written to the socket (Kafka: ResponseQueueTimeMs + ResponseSendTimeMs).", true)
	m.totalSeconds = latency("exactly_request_total_seconds", "Time from frame read to response written (Kafka: TotalTimeMs).", false)
	m.topicBytesIn = counterVec("exactly_topic_bytes_in_total", "Record-batch bytes appended by Produce, per topic (Kafka: BrokerTopicMetrics BytesInPerSec).", "topic")
	m.topicBytesOut = counterVec("exactly_topic_bytes_out_total", "Record-batch bytes sent in client Fetch responses, per topic (Kafka: BrokerTopicMetrics BytesOutPerSec).", "topic")
	m.produceBatches = counterVec("exactly_produce_batches_total", "Record batches appended by Produce, per topic (Kafka: no direct equivalent; ProduceMessageConversionsPerSec counts per batch).", "topic")
	m.produceRecords = counterVec("exactly_produce_records_total", "Records appended by Produce, per topic (Kafka: BrokerTopicMetrics MessagesInPerSec).", "topic")
	m.duplicates = counter("exactly_idempotent_duplicates_total", "Retried idempotent batches answered as duplicates and not written again (Kafka: no JMX equivalent; logged as duplicate sequence).")
	m.outOfOrder = counter("exactly_out_of_order_sequences_total", "Produce partitions answered OUT_OF_ORDER_SEQUENCE_NUMBER (Kafka: ErrorsPerSec{error=OUT_OF_ORDER_SEQUENCE_NUMBER}).")
	m.txnBegun = counter("exactly_transactions_begun_total", "Transactions opened by the transaction coordinator (first partition or group added).")
	m.txnCommitted = counter("exactly_transactions_committed_total", "Transactions completed as committed (every marker written) (Kafka: TransactionCoordinator commit rate).")
	m.txnAborted = counter("exactly_transactions_aborted_total", "Transactions completed as aborted, timed-out ones included.")
	m.txnTimedOut = counter("exactly_transactions_timed_out_total", "Transactions aborted by the coordinator because they ran past their timeout.")
	m.markersWritten = counter("exactly_transaction_markers_written_total", "COMMIT/ABORT markers appended to partitions on this broker, one per partition (Kafka: WriteTxnMarkers request rate).")
	m.endTxnSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "exactly_end_txn_seconds",
		Help: "EndTxn request time, decode to response (Kafka: RequestMetrics TotalTimeMs{request=EndTxn}).", Buckets: latencyBuckets})
	r.MustRegister(m.endTxnSeconds)
	m.rebalances = counter("exactly_group_rebalances_total", "Group generations started (one per completed join phase) (Kafka: GroupMetadataManager rebalance rate).")
	m.shareRecords = counterVec("exactly_share_records_total", "Share group records by event on this partition leader: acquired, redelivered (acquired again), accepted, released, rejected, archived (by a gap, a reject or the delivery limit), lock_timeout (acquisition locks that expired) (Kafka: SharePartitionMetrics).", "event")
	m.offsetsCommit = counter("exactly_group_offsets_committed_total", "Partition offsets accepted by OffsetCommit and TxnOffsetCommit (Kafka: GroupMetadataManager offset-commit-rate).")
	m.fsyncs = counter("exactly_fsync_total", "fdatasync calls on partition segment files (Kafka: LogFlushStats LogFlushRateAndTimeMs count).")
	m.fsyncSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "exactly_fsync_seconds",
		Help: "Time of each segment fdatasync (Kafka: LogFlushStats LogFlushRateAndTimeMs).", Buckets: fsyncBuckets})
	r.MustRegister(m.fsyncSeconds)
	m.cleanerRuns = counter("exactly_log_cleaner_runs_total", "Cleans of compacted logs that completed (Kafka: LogCleaner cleaner runs).")
	m.cleanerRead = counter("exactly_log_cleaner_bytes_read_total", "Segment bytes the log cleaner read (offset map and rewrite).")
	m.cleanerWritten = counter("exactly_log_cleaner_bytes_written_total", "Cleaned segment bytes the log cleaner wrote.")
	m.cleanerRemoved = counter("exactly_log_cleaner_records_removed_total", "Records the log cleaner removed: superseded, aborted, expired tombstones and markers.")
	m.cleanerFailed = counter("exactly_log_cleaner_failures_total", "Cleans that failed; the log is marked uncleanable until restart (Kafka: uncleanable-partitions-count).")
	m.connsOpened = counter("exactly_connections_opened_total", "Client connections accepted (Kafka: socket-server-metrics connection-creation-total).")
	m.connsClosed = counter("exactly_connections_closed_total", "Client connections closed (Kafka: socket-server-metrics connection-close-total).")
	m.connsRefused = counter("exactly_connections_refused_total", "Connections closed at accept: the broker was shutting down, or max.connections / max.connections.per.ip was reached (Kafka: connection-accept-rate refusals / failed-authentication-total).")
	m.connsOpen = prometheus.NewGauge(prometheus.GaugeOpts{Name: "exactly_connections_open", Help: "Client connections open now (Kafka: socket-server-metrics connection-count)."})
	r.MustRegister(m.connsOpen)
	m.isrShrinks = counter("exactly_isr_shrinks_total", "ISR changes of partitions led here that removed a replica, by this leader or by the controller fencing a broker (Kafka: kafka.server:type=ReplicaManager,name=IsrShrinksPerSec).")
	m.isrExpands = counter("exactly_isr_expands_total", "ISR changes of partitions led here that added a replica back (Kafka: kafka.server:type=ReplicaManager,name=IsrExpandsPerSec).")
	m.state = newStateCollector()
	r.MustRegister(m.state)
	return m
}

// Registry is the registry holding every collector, for an HTTP handler
// or a test's Gather.
func (m *Broker) Registry() *prometheus.Registry { return m.registry }

// Topic returns the data metrics of a topic, creating its series on
// first use. Callers cache the result (the broker keeps it on its topic).
func (m *Broker) Topic(name string) *Topic {
	m.topicsMu.Lock()
	defer m.topicsMu.Unlock()
	if t := m.topics[name]; t != nil {
		return t
	}
	t := &Topic{
		BytesIn:  m.topicBytesIn.WithLabelValues(name),
		BytesOut: m.topicBytesOut.WithLabelValues(name),
		Batches:  m.produceBatches.WithLabelValues(name),
		Records:  m.produceRecords.WithLabelValues(name),
	}
	m.topics[name] = t
	return t
}

// ForgetTopic drops a deleted topic's series.
func (m *Broker) ForgetTopic(name string) {
	m.topicsMu.Lock()
	defer m.topicsMu.Unlock()
	delete(m.topics, name)
	for _, vec := range []*prometheus.CounterVec{m.topicBytesIn, m.topicBytesOut, m.produceBatches, m.produceRecords} {
		vec.DeleteLabelValues(name)
	}
}

// IdempotentDuplicate counts a retried batch answered as a duplicate.
func (m *Broker) IdempotentDuplicate() { m.duplicates.Inc() }

// OutOfOrderSequence counts an OUT_OF_ORDER_SEQUENCE_NUMBER answer.
func (m *Broker) OutOfOrderSequence() { m.outOfOrder.Inc() }

// TransactionBegun counts a transaction opened.
func (m *Broker) TransactionBegun() { m.txnBegun.Inc() }

// TransactionCompleted counts a transaction completed, committed or not.
func (m *Broker) TransactionCompleted(committed bool) {
	if committed {
		m.txnCommitted.Inc()
	} else {
		m.txnAborted.Inc()
	}
}

// TransactionTimedOut counts a transaction aborted for its timeout.
func (m *Broker) TransactionTimedOut() { m.txnTimedOut.Inc() }

// MarkersWritten counts n partition markers appended.
func (m *Broker) MarkersWritten(n int) { m.markersWritten.Add(float64(n)) }

// EndTxn observes one EndTxn request's time.
func (m *Broker) EndTxn(d time.Duration) { m.endTxnSeconds.Observe(d.Seconds()) }

// GroupRebalance counts a group generation started.
func (m *Broker) GroupRebalance() { m.rebalances.Inc() }

// ShareRecords counts n share group records of one event (acquired,
// redelivered, accepted, released, rejected, archived, lock_timeout).
func (m *Broker) ShareRecords(event string, n int) {
	m.shareRecords.WithLabelValues(event).Add(float64(n))
}

// OffsetsCommitted counts n partition offsets committed.
func (m *Broker) OffsetsCommitted(n int) { m.offsetsCommit.Add(float64(n)) }

// Fsync observes one segment fsync; it is the storage.Options.OnSync hook.
func (m *Broker) Fsync(d time.Duration) {
	m.fsyncs.Inc()
	m.fsyncSeconds.Observe(d.Seconds())
}

// LogCleaned counts one completed clean of a compacted log.
func (m *Broker) LogCleaned(bytesRead, bytesWritten, recordsRemoved int64) {
	m.cleanerRuns.Inc()
	m.cleanerRead.Add(float64(bytesRead))
	m.cleanerWritten.Add(float64(bytesWritten))
	m.cleanerRemoved.Add(float64(recordsRemoved))
}

// LogCleanerFailed counts a clean that failed.
func (m *Broker) LogCleanerFailed() { m.cleanerFailed.Inc() }

// ConnectionOpened counts an accepted connection.
func (m *Broker) ConnectionOpened() {
	m.connsOpened.Inc()
	m.connsOpen.Inc()
}

// ConnectionClosed counts a closed connection.
func (m *Broker) ConnectionClosed() {
	m.connsClosed.Inc()
	m.connsOpen.Dec()
}

// ISRChanged counts an ISR change of a partition led here: a shrink
// when it lost members, an expand when it gained (both, when one left as
// another came back).
func (m *Broker) ISRChanged(before, after []int32) {
	for _, id := range before {
		if !slices.Contains(after, id) {
			m.isrShrinks.Inc()
			break
		}
	}
	for _, id := range after {
		if !slices.Contains(before, id) {
			m.isrExpands.Inc()
			break
		}
	}
}

// ConnectionRefused counts a connection closed at accept (shutdown or a
// connection limit).
func (m *Broker) ConnectionRefused() { m.connsRefused.Inc() }

// partitionLabel formats a partition index as the partition label.
func partitionLabel(p int32) string { return strconv.FormatInt(int64(p), 10) }
