package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/exactly-eos/exactly/broker/api"
	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/wire"
)

// Fetch v4–18 (v13+ names topics by id) answers from the partition logs
// without copying record bytes into user space: for each partition the
// handler resolves [position, size) regions of segment files up to the
// high watermark, and the connection's writer sends them with sendfile(2)
// (fetchResponse.writeTo) between the response's other fields.
//
// Except over TLS (SSL and SASL_SSL listeners): sendfile cannot be used
// there, since the kernel would put the file's bytes on the wire
// unencrypted (kernel TLS offload is not used). The writer then copies
// each region through user space (fetchResponse.copyTo): the file is read
// straight into one pooled 128 KiB buffer, which crypto/tls seals and
// writes, so a fetch allocates nothing per byte, but every byte costs a
// read copy plus the encryption; copiedRegionBytes counts them, and
// BenchmarkFetchConsumeTLS measures the CPU per GB either way.
//
// Long poll: when fewer than MinBytes are available and no partition has
// an error, the fetch waits on its partitions' append notifications until
// MinBytes, MaxWaitMillis or broker shutdown, on its own goroutine (the
// connection keeps reading). MaxBytes bounds the response and
// PartitionMaxBytes each partition, except that the first batch found is
// returned whole even when larger (KIP-74).
//
// Replication: a Fetch whose replica id is a broker's is a follower's
// fetch ([partition.Partition.RecordFollowerFetch]): its fetch offset records the
// follower's log end, it reads up to the log end rather than the high
// watermark, and a rise of the high watermark ends its long poll. Consumers
// and followers alike get NOT_LEADER_OR_FOLLOWER from a broker that does
// not lead the partition, and FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH
// for a current leader epoch older / newer than the partition's.
//
// Incremental fetch sessions are declined: the response's session id is 0
// and every response is full; a request naming a session gets
// FETCH_SESSION_ID_NOT_FOUND.
//
// Isolation: read_uncommitted reads up to the high watermark;
// read_committed (KIP-98) up to the last stable offset (the first offset
// of the oldest open transaction, [partition.Partition.LastStableOffset]) and gets, per
// partition, the aborted transactions overlapping the returned range from
// the aborted-transaction index, so the client drops aborted records.
// Every response carries the LSO.
func init() {
	register(wire.APIFetch, 4, 18, handleFetch)
}

// fetchTarget is one requested partition, resolved once per request.
type fetchTarget struct {
	topicIndex int // index into the response's topics
	index      int32
	partition  *topicPartition // nil when err is set
	err        error
	offset     int64
	maxBytes   int32
	// replica: a follower's fetch. startHighWatermark is then the high
	// watermark when the request arrived: a rise ends its long poll, so
	// followers learn the high watermark promptly.
	replica            bool
	startHighWatermark int64
}

// fetchTopic is one topic of the response, in request order.
type fetchTopic struct {
	name    string
	id      [16]byte
	targets []int // indexes into the targets slice
}

// partitionRead is what one partition contributes to a response.
type partitionRead struct {
	err           error
	highWatermark int64
	lastStable    int64
	// aborted lists the aborted transactions of the read range; nil for
	// read_uncommitted.
	aborted        []storage.AbortedTxn
	logStartOffset int64
	result         storage.ReadResult
	size           int64
}

func handleFetch(c *connection, r *request) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(r.header.APIVersion)
	if err := req.ReadFrom(r.body); err != nil {
		c.closeWith(r, fmt.Errorf("decode Fetch v%d: %w", r.header.APIVersion, err))
		return
	}
	r.release()
	if req.SessionID != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		if api := r.slot.timing.api; api != nil {
			countErrorCode(api, resp.ErrorCode)
		}
		c.respond(r, resp.AppendTo)
		return
	}
	topics, targets := c.broker.resolveFetch(req, c.fetchAuthorization(req))
	c.goAsync(r, func() { c.serveFetch(r, req, topics, targets) })
}

// fetchAuthorization is Kafka's check for Fetch (authorizationRules): a
// follower needs ClusterAction on the Cluster, or every partition is
// TOPIC_AUTHORIZATION_FAILED; a consumer needs Read on each topic.
func (c *connection) fetchAuthorization(req *kmsg.FetchRequest) func(topic string) error {
	if fetchReplicaID(req) >= 0 {
		clusterAction := c.authorizedCluster(kmsg.ACLOperationClusterAction)
		return func(string) error {
			if !clusterAction {
				return errTopicAuthorization
			}
			return nil
		}
	}
	return func(topic string) error {
		if !c.authorizedTopic(kmsg.ACLOperationRead, topic) {
			return errTopicAuthorization
		}
		return nil
	}
}

// resolveFetch looks up every requested partition; authorize refuses a
// topic by name (checked before the topic is looked up by name, after it
// is resolved by id, as Kafka orders them).
func (b *Broker) resolveFetch(req *kmsg.FetchRequest, authorize func(topic string) error) ([]fetchTopic, []fetchTarget) {
	replicaID := fetchReplicaID(req)
	var topics []fetchTopic
	var targets []fetchTarget
	for _, rt := range req.Topics {
		var t *topic
		topicErr := error(nil)
		if req.Version >= 13 {
			if t = b.topicByID(rt.TopicID); t == nil {
				topicErr = errUnknownTopicID
				if elsewhere := b.topicElsewhere(rt.TopicID, "", true); elsewhere != nil {
					topicErr = elsewhere
				}
			} else if topicErr = authorize(t.name); topicErr != nil {
				t = nil
			}
		} else if topicErr = authorize(rt.Topic); topicErr != nil {
			t = nil
		} else if t = b.topicByName(rt.Topic); t == nil {
			topicErr = fmt.Errorf("%w: %s", errUnknownTopic, rt.Topic)
			if elsewhere := b.topicElsewhere([16]byte{}, rt.Topic, false); elsewhere != nil {
				topicErr = elsewhere
			}
		}
		ft := fetchTopic{name: rt.Topic, id: rt.TopicID}
		for _, rp := range rt.Partitions {
			target := fetchTarget{topicIndex: len(topics), index: rp.Partition, err: topicErr,
				offset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes}
			if topicErr == nil {
				target.partition, target.err = b.partitionOf(t, rp.Partition)
			}
			if target.err == nil {
				target.err = target.partition.CheckLeader(rp.CurrentLeaderEpoch)
			}
			if target.err == nil && replicaID >= 0 {
				target.partition.RecordFollowerFetch(replicaID, rp.FetchOffset, rp.LogStartOffset)
				target.replica, target.startHighWatermark = true, target.partition.HighWatermark()
			}
			ft.targets = append(ft.targets, len(targets))
			targets = append(targets, target)
		}
		topics = append(topics, ft)
	}
	return topics, targets
}

// fetchReplicaID is the fetching follower's broker id, -1 for a consumer
// (v15+ carries it in ReplicaState, KIP-903).
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// serveFetch runs on its own goroutine: read, and until MinBytes or the
// deadline, wait for appends and read again.
func (c *connection) serveFetch(r *request, req *kmsg.FetchRequest, topics []fetchTopic, targets []fetchTarget) {
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		// Take the notification channels before reading, so an append
		// that lands after the read still wakes the wait below.
		wake := c.notificationsOf(targets)
		reads, total, anyError := c.broker.readFetch(req, targets)
		done := total >= int64(req.MinBytes) || anyError || !time.Now().Before(deadline) ||
			c.ctx.Err() != nil || c.broker.ctx.Err() != nil || highWatermarkRose(targets, reads)
		if done {
			if api := r.slot.timing.api; api != nil {
				c.broker.countFetched(api, targets, reads)
			}
			r.slot.markEncode()
			r.slot.completeFetch(encodeFetch(r, req.Version, topics, targets, reads))
			return
		}
		for i := range reads {
			reads[i].result.Release()
		}
		c.waitForAppend(wake, deadline)
	}
}

// highWatermarkRose reports whether a follower's fetch saw the high
// watermark rise since it arrived.
func highWatermarkRose(targets []fetchTarget, reads []partitionRead) bool {
	for i := range targets {
		if targets[i].replica && reads[i].highWatermark > targets[i].startHighWatermark {
			return true
		}
	}
	return false
}

// notificationsOf returns the distinct append channels of the targets.
func (c *connection) notificationsOf(targets []fetchTarget) []<-chan struct{} {
	seen := map[*topicPartition]bool{}
	var channels []<-chan struct{}
	for _, target := range targets {
		if target.partition != nil && !seen[target.partition] {
			seen[target.partition] = true
			channels = append(channels, target.partition.WaitChannel())
		}
	}
	return channels
}

// waitForAppend blocks until one of the channels is closed, the deadline
// passes, the connection ends or the broker closes.
func (c *connection) waitForAppend(channels []<-chan struct{}, deadline time.Time) {
	waitForAny(channels, deadline, c.ctx.Done(), c.broker.ctx.Done())
}

// waitForAny blocks until one of channels or of ends is closed or the
// deadline passes (a long poll's wait: Fetch and ShareFetch).
func waitForAny(channels []<-chan struct{}, deadline time.Time, ends ...<-chan struct{}) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	if len(channels) == 1 && len(ends) == 2 {
		select {
		case <-channels[0]:
		case <-timer.C:
		case <-ends[0]:
		case <-ends[1]:
		}
		return
	}
	cases := make([]reflect.SelectCase, 0, len(channels)+len(ends)+1)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)})
	for _, ch := range append(ends, channels...) {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	reflect.Select(cases)
}

// readFetch reads every target within the request's byte limits.
func (b *Broker) readFetch(req *kmsg.FetchRequest, targets []fetchTarget) ([]partitionRead, int64, bool) {
	reads := make([]partitionRead, len(targets))
	var total int64
	anyError := false
	for i, target := range targets {
		read := &reads[i]
		read.highWatermark, read.lastStable, read.logStartOffset = -1, -1, -1
		if target.err != nil {
			read.err, anyError = target.err, true
			continue
		}
		limit := min(int64(target.maxBytes), int64(req.MaxBytes)-total)
		minOneBatch := total == 0
		replica := fetchReplicaID(req) >= 0
		if err := readPartition(target, read, limit, minOneBatch, req.IsolationLevel == api.IsolationReadCommitted, replica); err != nil {
			read.err, anyError = err, true
			continue
		}
		total += read.size
	}
	return reads, total, anyError
}

// readPartition resolves the regions to send for one partition: up to the
// high watermark, or the last stable offset for read_committed, or for a
// follower (replica) up to the log end.
func readPartition(target fetchTarget, read *partitionRead, limit int64, minOneBatch, readCommitted, replica bool) error {
	p := target.partition
	if p.Closed() {
		return fmt.Errorf("%w: %s", errUnknownTopic, p.Name())
	}
	// The LSO first: it never exceeds the log end at any instant, so
	// read before the high watermark it stays at or below it.
	read.lastStable = p.LastStableOffset()
	read.highWatermark = p.HighWatermark()
	bound := read.highWatermark
	if readCommitted {
		bound = read.lastStable
		read.aborted = []storage.AbortedTxn{}
	}
	read.logStartOffset = p.Log().LogStartOffset()
	// Read after the high watermark, the log end is at or above it (a
	// follower's truncation lowers the high watermark first).
	logEnd := p.Log().LogEndOffset()
	if replica {
		bound = logEnd
	}
	if target.offset < read.logStartOffset || target.offset > logEnd {
		return fmt.Errorf("%w: %s offset %d, log has [%d, %d)", errOffsetOutOfRange, p.Name(),
			target.offset, read.logStartOffset, logEnd)
	}
	if target.offset >= bound || (limit <= 0 && !minOneBatch) {
		return nil
	}
	result, err := p.Log().Read(target.offset, bound, int(max(limit, 0)), minOneBatch)
	if err != nil {
		if p.Closed() {
			return fmt.Errorf("%w: %s", errUnknownTopic, p.Name())
		}
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			return fmt.Errorf("%w: %s: %w", errOffsetOutOfRange, p.Name(), err)
		}
		return fmt.Errorf("%w: read %s: %w", errStorage, p.Name(), err)
	}
	read.result = result
	for _, region := range result.Regions {
		read.size += region.Size
	}
	if readCommitted && read.size > 0 {
		read.aborted = p.Log().AbortedTxns(target.offset, bound)
	}
	return nil
}

// encodeFetch lays out the response: every field but the records goes
// into one pooled buffer, and each partition's records are file regions
// spliced in by the writer. The frame size is known up front because
// every region's size is.
func encodeFetch(r *request, version int16, topics []fetchTopic, targets []fetchTarget, reads []partitionRead) *fetchResponse {
	flexible := version >= 12
	response := &fetchResponse{buffer: bytebufferpool.Get()}
	b, sizeAt := wire.AppendFrameSize(response.buffer.B[:0])
	b = wire.AppendResponseHeader(b, r.header.CorrelationID, wire.ResponseHeaderVersion(wire.APIFetch, version))
	b = wire.AppendInt32(b, 0) // throttle_time_ms
	if version >= 7 {
		b = wire.AppendInt16(b, 0) // error_code
		b = wire.AppendInt32(b, 0) // session_id: sessions declined
	}
	b = appendArrayLength(b, len(topics), flexible)
	var regionBytes int64
	for _, ft := range topics {
		if version >= 13 {
			b = append(b, ft.id[:]...)
		} else {
			b = appendKafkaString(b, ft.name, flexible)
		}
		b = appendArrayLength(b, len(ft.targets), flexible)
		for _, ti := range ft.targets {
			read := &reads[ti]
			b = appendFetchPartitionHead(b, version, targets[ti].index, read)
			b = appendBytesLength(b, read.size, flexible)
			for _, region := range read.result.Regions {
				response.pieces = append(response.pieces, fetchPiece{end: len(b)}, fetchPiece{region: region, isRegion: true})
				regionBytes += region.Size
			}
			if flexible {
				b = wire.AppendUvarint(b, 0) // partition tagged fields
			}
		}
		if flexible {
			b = wire.AppendUvarint(b, 0) // topic tagged fields
		}
	}
	if flexible {
		b = wire.AppendUvarint(b, 0) // response tagged fields
	}
	response.pieces = append(response.pieces, fetchPiece{end: len(b)})
	// Pieces of the buffer run from the previous buffer piece's end.
	start := 0
	for i := range response.pieces {
		if !response.pieces[i].isRegion {
			response.pieces[i].start = start
			start = response.pieces[i].end
		}
	}
	frameSize := int64(len(b)-sizeAt-4) + regionBytes
	binary.BigEndian.PutUint32(b[sizeAt:], uint32(frameSize))
	response.buffer.B = b
	for i := range reads {
		response.reads = append(response.reads, reads[i].result)
	}
	return response
}

func appendFetchPartitionHead(b []byte, version int16, index int32, read *partitionRead) []byte {
	b = wire.AppendInt32(b, index)
	b = wire.AppendInt16(b, errorCode(read.err))
	b = wire.AppendInt64(b, read.highWatermark)
	b = wire.AppendInt64(b, read.lastStable)
	if version >= 5 {
		b = wire.AppendInt64(b, read.logStartOffset)
	}
	b = appendAbortedTransactions(b, read.aborted, version >= 12)
	if version >= 11 {
		b = wire.AppendInt32(b, -1) // preferred_read_replica
	}
	return b
}

// appendAbortedTransactions encodes the aborted_transactions array (null
// for read_uncommitted).
func appendAbortedTransactions(b []byte, aborted []storage.AbortedTxn, flexible bool) []byte {
	if aborted == nil {
		return appendNullArray(b, flexible)
	}
	b = appendArrayLength(b, len(aborted), flexible)
	for _, t := range aborted {
		b = wire.AppendInt64(b, t.ProducerID)
		b = wire.AppendInt64(b, t.FirstOffset)
		if flexible {
			b = wire.AppendUvarint(b, 0) // tagged fields
		}
	}
	return b
}

// Encoding helpers for the classic and flexible (compact) forms.

func appendArrayLength(b []byte, n int, flexible bool) []byte {
	if flexible {
		return wire.AppendUvarint(b, uint32(n)+1)
	}
	return wire.AppendInt32(b, int32(n))
}

func appendNullArray(b []byte, flexible bool) []byte {
	if flexible {
		return wire.AppendUvarint(b, 0)
	}
	return wire.AppendInt32(b, -1)
}

func appendBytesLength(b []byte, n int64, flexible bool) []byte {
	if flexible {
		return wire.AppendUvarint(b, uint32(n)+1)
	}
	return wire.AppendInt32(b, int32(n))
}

func appendKafkaString(b []byte, s string, flexible bool) []byte {
	if flexible {
		return wire.AppendCompactString(b, s)
	}
	return wire.AppendString(b, s)
}
