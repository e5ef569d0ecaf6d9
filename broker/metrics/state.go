package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// PartitionState is one partition's log figures at scrape time.
type PartitionState struct {
	Topic     string
	Partition int32
	// LogEndOffset is the offset the next batch gets.
	LogEndOffset int64
	// Segments is the number of segment files.
	Segments int
	// SizeBytes is the total size of the segment files.
	SizeBytes int64
	// LSOLagRecords is the high watermark minus the last stable offset.
	LSOLagRecords int64
}

// GroupState is one consumer group's membership at scrape time.
type GroupState struct {
	Group   string
	Members int
	// Lags are the group's committed partitions whose high watermark this
	// broker knows (it holds a replica), each with its lag.
	Lags []PartitionLag
}

// PartitionLag is a group's lag on one partition: the partition's high
// watermark minus the group's committed offset.
type PartitionLag struct {
	Topic     string
	Partition int32
	Records   int64
}

// ReplicationState is the broker's replication figures at scrape time, as
// Kafka's ReplicaManager and controller report them.
type ReplicationState struct {
	// Partitions counts the partition replicas here; Leaders those led
	// here.
	Partitions, Leaders int
	// UnderReplicated counts the partitions led here whose ISR lacks some
	// replica; UnderMinISR those whose ISR is smaller than their
	// min.insync.replicas (acks=all produces are refused).
	UnderReplicated, UnderMinISR int
	// ActiveController is whether this broker's node is the active
	// controller; Offline counts, on the active controller only, the
	// partitions of the cluster without a leader.
	ActiveController bool
	Offline          int
	// QuorumLastLog, QuorumCommitted and QuorumApplied are the metadata
	// quorum node's raft indexes (0 without a quorum node).
	QuorumLastLog, QuorumCommitted, QuorumApplied uint64
}

// Sources are the functions the scrape-time collector calls; the broker
// sets them once it is running (SetSources). Each is called on the
// scraping goroutine and must be safe to call concurrently with the
// broker's work; each may be nil.
type Sources struct {
	// Partitions lists every partition's log figures.
	Partitions func() []PartitionState
	// Groups lists every group's member count.
	Groups func() []GroupState
	// OpenTransactions counts transactions open (Ongoing or preparing).
	OpenTransactions func() int
	// Replication reads the replication figures.
	Replication func() ReplicationState
}

// SetSources installs the scrape-time sources; a later call replaces them.
func (m *Broker) SetSources(s Sources) { m.state.set(s) }

// stateCollector is the custom collector of figures read at scrape time
// rather than counted on the request path.
type stateCollector struct {
	mu      sync.Mutex
	sources Sources

	logEndOffset *prometheus.Desc
	segments     *prometheus.Desc
	sizeBytes    *prometheus.Desc
	lsoLag       *prometheus.Desc
	members      *prometheus.Desc
	groupLag     *prometheus.Desc
	openTxns     *prometheus.Desc

	partitions       *prometheus.Desc
	leaders          *prometheus.Desc
	underReplicated  *prometheus.Desc
	underMinISR      *prometheus.Desc
	activeController *prometheus.Desc
	offline          *prometheus.Desc
	quorumIndex      *prometheus.Desc
}

func newStateCollector() *stateCollector {
	tp := []string{"topic", "partition"}
	return &stateCollector{
		logEndOffset: prometheus.NewDesc("exactly_log_end_offset", "Log end offset per partition (Kafka: kafka.log:type=Log LogEndOffset).", tp, nil),
		segments:     prometheus.NewDesc("exactly_log_segments", "Segment files per partition (Kafka: kafka.log:type=Log NumLogSegments).", tp, nil),
		sizeBytes:    prometheus.NewDesc("exactly_log_size_bytes", "Bytes of segment files per partition (Kafka: kafka.log:type=Log Size).", tp, nil),
		lsoLag: prometheus.NewDesc("exactly_partition_lso_lag_records",
			"High watermark minus last stable offset per partition: records read_committed consumers cannot see yet (Kafka: no JMX equivalent; LastStableOffsetLag in kafka.cluster:type=Partition of some versions).", tp, nil),
		members: prometheus.NewDesc("exactly_group_members", "Members of each consumer group this broker coordinates (Kafka: consumer-coordinator group size; no broker JMX).", []string{"group"}, nil),
		groupLag: prometheus.NewDesc("exactly_group_lag_records",
			"Per group and partition, the partition's high watermark minus the group's committed offset, on the broker coordinating the group, for partitions with a replica there (Kafka: no broker metric; consumers' records-lag, kafka-consumer-groups.sh LAG).",
			[]string{"group", "topic", "partition"}, nil),
		openTxns: prometheus.NewDesc("exactly_transactions_open", "Transactions open now on this broker's coordinator: Ongoing, PrepareCommit or PrepareAbort.", nil, nil),

		partitions: prometheus.NewDesc("exactly_partitions", "Partition replicas on this broker (Kafka: kafka.server:type=ReplicaManager,name=PartitionCount).", nil, nil),
		leaders:    prometheus.NewDesc("exactly_leader_partitions", "Partitions led by this broker (Kafka: kafka.server:type=ReplicaManager,name=LeaderCount).", nil, nil),
		underReplicated: prometheus.NewDesc("exactly_under_replicated_partitions",
			"Partitions led here whose ISR lacks some replica (Kafka: kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions).", nil, nil),
		underMinISR: prometheus.NewDesc("exactly_under_min_isr_partitions",
			"Partitions led here whose ISR is smaller than min.insync.replicas: acks=all produces to them fail (Kafka: kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount).", nil, nil),
		activeController: prometheus.NewDesc("exactly_active_controller",
			"1 on the broker whose node is the active controller, 0 elsewhere (Kafka: kafka.controller:type=KafkaController,name=ActiveControllerCount).", nil, nil),
		quorumIndex: prometheus.NewDesc("exactly_quorum_index",
			"The metadata quorum node's raft log indexes: kind=last_log (its log end), committed (what a majority holds), applied (what its metadata reflects); committed - applied is how far this member's metadata lags (Kafka: kafka.server:type=raft-metrics log-end-offset, high-watermark, and the metadata loader's last-applied-record-offset).",
			[]string{"kind"}, nil),
		offline: prometheus.NewDesc("exactly_offline_partitions",
			"On the active controller, the cluster's partitions without a leader; 0 elsewhere (Kafka: kafka.controller:type=KafkaController,name=OfflinePartitionsCount).", nil, nil),
	}
}

func (c *stateCollector) set(s Sources) {
	c.mu.Lock()
	c.sources = s
	c.mu.Unlock()
}

// Describe sends every descriptor.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.logEndOffset, c.segments, c.sizeBytes, c.lsoLag, c.members, c.groupLag, c.openTxns,
		c.partitions, c.leaders, c.underReplicated, c.underMinISR, c.activeController, c.offline, c.quorumIndex} {
		ch <- d
	}
}

// Collect reads the sources now.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	s := c.sources
	c.mu.Unlock()
	if s.Partitions != nil {
		for _, p := range s.Partitions() {
			labels := []string{p.Topic, partitionLabel(p.Partition)}
			ch <- prometheus.MustNewConstMetric(c.logEndOffset, prometheus.GaugeValue, float64(p.LogEndOffset), labels...)
			ch <- prometheus.MustNewConstMetric(c.segments, prometheus.GaugeValue, float64(p.Segments), labels...)
			ch <- prometheus.MustNewConstMetric(c.sizeBytes, prometheus.GaugeValue, float64(p.SizeBytes), labels...)
			ch <- prometheus.MustNewConstMetric(c.lsoLag, prometheus.GaugeValue, float64(p.LSOLagRecords), labels...)
		}
	}
	if s.Groups != nil {
		for _, g := range s.Groups() {
			ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(g.Members), g.Group)
			for _, lag := range g.Lags {
				ch <- prometheus.MustNewConstMetric(c.groupLag, prometheus.GaugeValue, float64(lag.Records), g.Group, lag.Topic, partitionLabel(lag.Partition))
			}
		}
	}
	open := 0
	if s.OpenTransactions != nil {
		open = s.OpenTransactions()
	}
	ch <- prometheus.MustNewConstMetric(c.openTxns, prometheus.GaugeValue, float64(open))
	var replication ReplicationState
	if s.Replication != nil {
		replication = s.Replication()
	}
	active := 0.0
	if replication.ActiveController {
		active = 1
	}
	ch <- prometheus.MustNewConstMetric(c.partitions, prometheus.GaugeValue, float64(replication.Partitions))
	ch <- prometheus.MustNewConstMetric(c.leaders, prometheus.GaugeValue, float64(replication.Leaders))
	ch <- prometheus.MustNewConstMetric(c.underReplicated, prometheus.GaugeValue, float64(replication.UnderReplicated))
	ch <- prometheus.MustNewConstMetric(c.underMinISR, prometheus.GaugeValue, float64(replication.UnderMinISR))
	ch <- prometheus.MustNewConstMetric(c.activeController, prometheus.GaugeValue, active)
	ch <- prometheus.MustNewConstMetric(c.offline, prometheus.GaugeValue, float64(replication.Offline))
	ch <- prometheus.MustNewConstMetric(c.quorumIndex, prometheus.GaugeValue, float64(replication.QuorumLastLog), "last_log")
	ch <- prometheus.MustNewConstMetric(c.quorumIndex, prometheus.GaugeValue, float64(replication.QuorumCommitted), "committed")
	ch <- prometheus.MustNewConstMetric(c.quorumIndex, prometheus.GaugeValue, float64(replication.QuorumApplied), "applied")
}
