package broker

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/partition"
	"github.com/exactly-eos/exactly/wire"
)

// Produce v3–13 (record batch v2 only; v13 names topics by id) walks the
// request as a zero-copy view over the frame buffer. Each partition's
// batches are validated from their headers and CRC-32C (never decompressed;
// one pass over the headers, [partition.Analyze], which every later step uses)
// and checked against max.message.bytes before any byte of that partition
// is written; then their base offsets and leader epoch are patched in place
// and the same bytes are appended to the log.
//
// Ordering: appends run here, in the connection's reader goroutine, so the
// batches of one connection reach each partition in the order they arrived
// (idempotent producers pipeline up to 5 requests and rely on it).
//
// Idempotence: a batch with a producer id is checked against the
// partition's producer state and appended under the partition's append
// lock ([partition.Partition.AppendClient]). A retry of one of the producer's 5 newest
// batches is answered with the original offsets (and, for acks=all, after
// the original is durable) and is not written again; a sequence gap is
// OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH, an
// unknown producer not starting at sequence 0 UNKNOWN_PRODUCER_ID (see
// [errcode.Produce] for the per-version codes); nothing is written then.
//
// Transactions: a transactional batch must come with the request's
// transactional id and pass the coordinator's KIP-890 verification
// ([partition.TxnVerifier], produceTxn): INVALID_TXN_STATE when its partition is not in the
// producer's open transaction, INVALID_PRODUCER_EPOCH when the producer
// was fenced, INVALID_PRODUCER_ID_MAPPING for an unknown id. Under
// transaction.version 2, Produce v12+ adds the partition to the
// transaction instead (KIP-890 part 2).
//
// acks: 0 sends no response at all; 1 answers once appended; -1 (all)
// answers once the batches are durable under log.fsync (the wait runs on
// its own goroutine so the reader goes on), and fails with
// NOT_ENOUGH_REPLICAS when min.insync.replicas exceeds our single replica.
// A replicated partition ([Broker.ApplyPartitionRoles]) takes produce only on its
// leader (NOT_LEADER_OR_FOLLOWER elsewhere); acks=all is refused with
// NOT_ENOUGH_REPLICAS before the append when the ISR is smaller than
// min.insync.replicas, and answered once the ISR has the batch
// ([partition.Partition.WaitReplicated]). The leader epoch is stamped into each batch under
// the append lock, so it matches the leader-epoch checkpoint.
func init() {
	register(wire.APIProduce, 3, 13, handleProduce)
}

// produceWait is an appended partition whose acks=all answer waits for
// durability.
type produceWait struct {
	partition  *topicPartition
	lastOffset int64
	// minInsync is the topic's min.insync.replicas (replicated partitions).
	minInsync int64
}

func handleProduce(c *connection, r *request) {
	version := r.header.APIVersion
	req, err := wire.ParseProduceRequest(r.body, version)
	if err == nil {
		err = checkProduceStructure(&req)
	}
	if err != nil {
		c.closeWith(r, err)
		return
	}
	acks := req.Acks
	tx := produceTxn{broker: c.broker, transactionalID: req.TransactionalID, version: version, ctx: c.ctx}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = version
	var waits []produceWait
	// Authorization (authorizationRules): a transactional producer needs Write
	// on its transactional id, or every partition fails; each topic needs
	// Write, checked before the topic is looked up or auto-created.
	var requestErr error
	if req.TransactionalID != nil && !c.authorizedTransactionalID(kmsg.ACLOperationWrite, string(req.TransactionalID)) {
		requestErr = errTransactionalIDAuthorization
	}
	topics := req.Topics()
	for topics.Next() {
		name, topicID, partitions := topics.Topic()
		t, topicErr := c.produceTopic(name, topicID, version, requestErr)
		responseTopic := kmsg.NewProduceResponseTopic()
		responseTopic.Topic, responseTopic.TopicID = string(name), topicID
		for partitions.Next() {
			index, records := partitions.Partition()
			responseTopic.Partitions = append(responseTopic.Partitions, kmsg.NewProduceResponseTopicPartition())
			rp := &responseTopic.Partitions[len(responseTopic.Partitions)-1]
			rp.Partition = index
			p, appendErr := c.broker.produceToPartition(t, topicErr, index, records, acks, tx)
			if appendErr != nil {
				setProduceError(rp, appendErr, version)
				if p.partition != nil {
					rp.LogStartOffset = p.partition.Log().LogStartOffset()
				}
				continue
			}
			rp.BaseOffset, rp.LogStartOffset = p.baseOffset, p.partition.Log().LogStartOffset()
			rp.LogAppendTime = p.logAppendTime
			if acks == -1 {
				waits = append(waits, produceWait{partition: p.partition, lastOffset: p.lastOffset,
					minInsync: p.partition.topic.config.Load().minInsyncReplica})
			}
		}
		resp.Topics = append(resp.Topics, responseTopic)
	}
	r.release() // every batch is appended (copied into the log) by now
	switch {
	case acks == 0:
		if failed := firstProduceError(resp); failed != "" {
			// An acks=0 producer reads no answer: as in Kafka, a failed
			// append closes its connection, the only way it learns (it
			// refreshes its metadata and reconnects).
			c.logger.Info("closing connection: acks=0 produce failed", "partition", failed)
			r.slot.completeClose()
			c.stopReader = true
			return
		}
		r.slot.completeNone()
	case len(waits) == 0:
		if api := r.slot.timing.api; api != nil {
			countResponseErrors(api, resp)
		}
		c.respond(r, resp.AppendTo)
	default:
		timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
		c.goAsync(r, func() { c.awaitDurable(r, resp, waits, timeout) })
	}
}

// firstProduceError names the first partition of resp that failed
// ("topic-partition: error"), or is empty.
func firstProduceError(resp *kmsg.ProduceResponse) string {
	for _, topic := range resp.Topics {
		for _, partition := range topic.Partitions {
			if partition.ErrorCode != 0 {
				return fmt.Sprintf("%s-%d: %v", topic.Topic, partition.Partition, kerr.ErrorForCode(partition.ErrorCode))
			}
		}
	}
	return ""
}

// checkProduceStructure walks the whole request once, so a malformed
// request is refused before any of its partitions is written.
func checkProduceStructure(req *wire.ProduceRequest) error {
	topics := req.Topics()
	for topics.Next() {
		_, _, partitions := topics.Topic()
		for partitions.Next() {
		}
		if err := partitions.Err(); err != nil {
			return err
		}
	}
	return topics.Err()
}

// awaitDurable runs on its own goroutine for acks=all: it waits for every
// appended partition to be in the ISR's logs (WaitReplicated, within the
// request's timeout) and durable, then answers.
func (c *connection) awaitDurable(r *request, resp *kmsg.ProduceResponse, waits []produceWait, timeout time.Duration) {
	var start time.Time
	if r.slot.timing.api != nil {
		start = time.Now()
	}
	for _, wait := range waits {
		err := wait.partition.WaitReplicated(c.ctx, c.broker.ctx.Done(), wait.lastOffset, wait.minInsync, timeout)
		if err == nil {
			err = wait.partition.WaitDurable(c.ctx, wait.lastOffset)
		}
		if err != nil {
			rp := findProducePartition(resp, wait.partition)
			if rp != nil {
				setProduceError(rp, err, resp.Version)
			}
		}
	}
	if api := r.slot.timing.api; api != nil {
		r.slot.timing.durability = time.Since(start)
		countResponseErrors(api, resp)
	}
	c.respond(r, resp.AppendTo)
}

func findProducePartition(resp *kmsg.ProduceResponse, p *topicPartition) *kmsg.ProduceResponseTopicPartition {
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		if rt.Topic != p.topic.name && rt.TopicID != p.topic.id {
			continue
		}
		for j := range rt.Partitions {
			if rt.Partitions[j].Partition == p.Index() {
				return &rt.Partitions[j]
			}
		}
	}
	return nil
}

func setProduceError(rp *kmsg.ProduceResponseTopicPartition, err error, version int16) {
	rp.ErrorCode = produceErrorCode(err, version)
	rp.BaseOffset = -1
	rp.LogAppendTime = -1
	rp.LogStartOffset = -1
	if version >= 8 {
		rp.ErrorMessage = errorMessage(err)
	}
}

// produceTopic is produceTopic after the authorization checks: requestErr
// (the transactional id's refusal) fails every topic, and a topic needs
// Write (TOPIC_AUTHORIZATION_FAILED); creating one needs Create.
func (c *connection) produceTopic(name []byte, topicID [16]byte, version int16, requestErr error) (*topic, error) {
	if requestErr != nil {
		return nil, requestErr
	}
	if version >= 13 {
		t, err := c.broker.produceTopic(name, topicID, version, false)
		if t != nil && !c.authorizedTopic(kmsg.ACLOperationWrite, t.name) {
			return nil, errTopicAuthorization
		}
		return t, err
	}
	topicName := string(name)
	if !c.authorizedTopic(kmsg.ACLOperationWrite, topicName) {
		return nil, errTopicAuthorization
	}
	allowCreate := c.broker.topicByName(topicName) != nil || c.mayCreateTopic(topicName)
	return c.broker.produceTopic(name, topicID, version, allowCreate)
}

// produceTopic resolves a Produce topic by name (creating it when allowed
// by allowCreate and auto.create.topics.enable) or, from v13, by id. The
// internal topics are refused, as in Kafka.
func (b *Broker) produceTopic(name []byte, topicID [16]byte, version int16, allowCreate bool) (*topic, error) {
	if version >= 13 {
		if t := b.topicByID(topicID); t != nil {
			if isInternalTopicName(t.name) {
				return nil, fmt.Errorf("%w: clients cannot produce to %s", errInternalTopic, t.name)
			}
			return t, nil
		}
		if elsewhere := b.topicElsewhere(topicID, "", true); elsewhere != nil {
			return nil, elsewhere
		}
		return nil, errUnknownTopicID
	}
	topicName := string(name)
	if err := validateTopicName(topicName); err != nil {
		return nil, err
	}
	if isInternalTopicName(topicName) {
		return nil, fmt.Errorf("%w: clients cannot produce to %s", errInternalTopic, topicName)
	}
	if b.topicByName(topicName) == nil {
		if elsewhere := b.topicElsewhere([16]byte{}, topicName, false); elsewhere != nil {
			return nil, elsewhere
		}
	}
	return b.clusterProduceTopic(topicName, allowCreate)
}

// appended is the outcome of a successful partition append.
type appended struct {
	partition     *topicPartition
	baseOffset    int64
	lastOffset    int64
	logAppendTime int64
}

// produceToPartition validates the partition's batches and appends them.
func (b *Broker) produceToPartition(t *topic, topicErr error, index int32, records []byte, acks int16, tx produceTxn) (appended, error) {
	if topicErr != nil {
		return appended{}, topicErr
	}
	if acks != 0 && acks != 1 && acks != -1 {
		return appended{}, errInvalidRequiredAcks
	}
	p, err := b.partitionOf(t, index)
	if err != nil {
		return appended{}, err
	}
	if err := p.CheckLeader(-1); err != nil {
		return appended{}, err
	}
	tc := t.config.Load()
	if acks == -1 {
		if err := p.CheckMinInsync(tc.minInsyncReplica); err != nil {
			return appended{}, err
		}
	}
	// The one pass over the batch headers: the request's batches are
	// validated and described here, before any is written.
	var scratch [1]partition.BatchInfo
	info, err := partition.Analyze(partition.OriginClient, records, 0, tc.maxMessageBytes, scratch[:0])
	if err != nil {
		return appended{}, fmt.Errorf("%s: %w", p.Name(), err)
	}
	appendTime := int64(-1)
	if tc.logAppendTime {
		appendTime = time.Now().UnixMilli()
		info.StampLogAppendTime(appendTime)
	}
	result, err := p.AppendClient(records, &info, tx)
	if b.metrics != nil {
		b.countProduced(t, &info, result, err)
	}
	if err != nil {
		// The partition goes back with the error: its log start offset
		// tells an idempotent client whether UNKNOWN_PRODUCER_ID or
		// OUT_OF_ORDER_SEQUENCE_NUMBER means lost data or only a producer
		// whose batches retention deleted (franz-go's sink.handleReqRespBatch, KIP-360).
		return appended{partition: p}, err
	}
	if result.Duplicate && appendTime >= 0 {
		appendTime = result.MaxTimestamp // the original append's time
	}
	return appended{partition: p, baseOffset: result.FirstOffset, lastOffset: result.LastOffset, logAppendTime: appendTime}, nil
}
