package broker

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/txn"
)

// Requests to other brokers of the cluster, made by this broker's
// coordinators: WriteTxnMarkers to the leader of a partition led elsewhere
// (the coordinator epoch fences a stale coordinator there), and
// AddPartitionsToTxn (VerifyOnly for KIP-890 part 1, an add for part 2)
// from a partition leader to the transaction coordinator of a producer,
// and AddOffsetsToTxn (part 2) from a group's coordinator to it. Each peer broker gets one
// franz-go client seeded with its registered listener only, and requests
// go to that seed broker directly (not through the client's routing), so a
// request reaches exactly the broker meant. peers.mu is a leaf guarding
// the client map.

// peers are the clients to the other brokers.
type peers struct {
	mu      sync.Mutex
	clients map[int32]*peerClient
	closed  bool
}

type peerClient struct {
	addr   string
	client *kgo.Client
}

// request sends req to broker id and returns its answer.
func (b *Broker) peerRequest(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	addr, err := b.replication.brokerAddress(id)
	if err != nil {
		return nil, err
	}
	ps := &b.replication.peers
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return nil, fmt.Errorf("%w: no requests to other brokers", errShuttingDown)
	}
	if ps.clients == nil {
		ps.clients = map[int32]*peerClient{}
	}
	pc := ps.clients[id]
	if pc != nil && pc.addr != addr {
		pc.client.Close()
		pc = nil
	}
	if pc == nil {
		client, err := kgo.NewClient(append(b.replication.peerOptions(), kgo.SeedBrokers(addr),
			kgo.ClientID(fmt.Sprintf("exactly-broker-%d", b.nodeID)))...)
		if err != nil {
			ps.mu.Unlock()
			return nil, fmt.Errorf("client for broker %d at %s: %w", id, addr, err)
		}
		pc = &peerClient{addr: addr, client: client}
		ps.clients[id] = pc
	}
	ps.mu.Unlock()
	// kgo numbers seed brokers from math.MinInt32: the first seed is the peer.
	return pc.client.Broker(math.MinInt32).Request(ctx, req)
}

// closePeers closes every peer client (Broker.Close).
func (b *Broker) closePeers() {
	ps := &b.replication.peers
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.closed = true
	for _, pc := range ps.clients {
		pc.client.Close()
	}
	ps.clients = nil
}

// remoteWriteMarkers sends m to broker leader as a WriteTxnMarkers
// request and returns its answer per partition, as [Broker.writeMarkers]
// does here: errs[i] is the result of m.partitions[i]. A request that
// fails fails every partition; UNKNOWN_TOPIC_OR_PARTITION is
// errUnknownTopic (the partition is gone there), another code its Kafka
// error; a partition the answer leaves out counts as written (a broker
// answers every partition it is sent).
func (b *Broker) remoteWriteMarkers(ctx context.Context, leader int32, m markerWrite) (errs []error) {
	errs = make([]error, len(m.partitions))
	answer, err := b.peerRequest(ctx, leader, markersRequest(m))
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	codes := map[txn.TopicPartition]int16{}
	for _, result := range answer.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, topic := range result.Topics {
			for _, partition := range topic.Partitions {
				codes[txn.TopicPartition{Topic: topic.Topic, Partition: partition.Partition}] = partition.ErrorCode
			}
		}
	}
	for i, tp := range m.partitions {
		switch code := codes[tp]; code {
		case 0:
		case kerr.UnknownTopicOrPartition.Code:
			// Not "deleted": the leader's view may lag this broker's
			// (it has just restarted, or has not applied the topic's
			// creation yet). Retried, as Kafka does; the coordinator's
			// own view decides that a topic is gone
			// ([Broker.writeMarkersToLeaders]).
			errs[i] = fmt.Errorf("%w: broker %d does not know %s yet", errNotLeader, leader, tp)
		default:
			errs[i] = kerr.ErrorForCode(code)
		}
	}
	return errs
}

// markersRequest is the WriteTxnMarkers request of one marker, its
// partitions grouped by topic.
func markersRequest(m markerWrite) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	marker := kmsg.NewWriteTxnMarkersRequestMarker()
	marker.ProducerID, marker.ProducerEpoch, marker.Committed, marker.CoordinatorEpoch = m.producerID, m.producerEpoch, m.commit, m.coordinatorEpoch
	topicAt := map[string]int{}
	for _, tp := range m.partitions {
		at, ok := topicAt[tp.Topic]
		if !ok {
			at = len(marker.Topics)
			topicAt[tp.Topic] = at
			topic := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			topic.Topic = tp.Topic
			marker.Topics = append(marker.Topics, topic)
		}
		marker.Topics[at].Partitions = append(marker.Topics[at].Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, marker)
	return req
}

// remoteAddPartition asks the transaction coordinator of the producer's
// id, on another broker, about partition with AddPartitionsToTxn v4+
// (the brokers' form): with verifyOnly, whether it is in the open
// transaction (KIP-890 part 1); without, to add it (KIP-890 part 2's
// implicit add of a Produce v12+ under transaction.version 2). The
// answer's code becomes the error (errorCode maps it back).
func (b *Broker) remoteAddPartition(ctx context.Context, coordinator int32, producer txn.Producer, partition txn.TopicPartition, verifyOnly bool) error {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	if !verifyOnly {
		req.Version = 5
	}
	transaction := kmsg.NewAddPartitionsToTxnRequestTransaction()
	transaction.TransactionalID, transaction.ProducerID, transaction.ProducerEpoch = producer.TransactionalID, producer.ProducerID, producer.Epoch
	transaction.VerifyOnly = verifyOnly
	topic := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	topic.Topic, topic.Partitions = partition.Topic, []int32{partition.Partition}
	transaction.Topics = append(transaction.Topics, topic)
	req.Transactions = append(req.Transactions, transaction)
	what := "verify with"
	if !verifyOnly {
		what = "add to the transaction at"
	}
	answer, err := b.peerRequest(ctx, coordinator, req)
	if err != nil {
		return fmt.Errorf("%w: %s transaction coordinator %d: %w", errNoCoordinator, what, coordinator, err)
	}
	resp := answer.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return verifyError(resp.ErrorCode, coordinator)
	}
	for _, result := range resp.Transactions {
		for _, topic := range result.Topics {
			for _, p := range topic.Partitions {
				if p.ErrorCode != 0 {
					return verifyError(p.ErrorCode, coordinator)
				}
			}
		}
	}
	return nil
}

// remoteAddOffsets adds a consumer group to the producer's transaction at
// its coordinator on another broker (AddOffsetsToTxn v4): KIP-890 part
// 2's implicit add of a TxnOffsetCommit v5+ under transaction.version 2,
// sent by the broker coordinating the group. The group travels by name,
// as the coordinator completes a transaction's offsets per group.
func (b *Broker) remoteAddOffsets(ctx context.Context, coordinator int32, producer txn.Producer, groupID string) error {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = 4
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = producer.TransactionalID, producer.ProducerID, producer.Epoch, groupID
	answer, err := b.peerRequest(ctx, coordinator, req)
	if err != nil {
		return fmt.Errorf("%w: add group %q to the transaction at transaction coordinator %d: %w", errNoCoordinator, groupID, coordinator, err)
	}
	if code := answer.(*kmsg.AddOffsetsToTxnResponse).ErrorCode; code != 0 {
		return verifyError(code, coordinator)
	}
	return nil
}

// verifyError is the error of a remote verification's code, as the local
// coordinator's sentinel where one exists (so Produce and TxnOffsetCommit
// map it as they map a local answer).
func verifyError(code int16, coordinator int32) error {
	switch code {
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code:
		return fmt.Errorf("transaction coordinator %d: %w", coordinator, txn.ErrProducerFenced)
	case kerr.InvalidTxnState.Code:
		return fmt.Errorf("transaction coordinator %d: %w", coordinator, txn.ErrInvalidTxnState)
	case kerr.InvalidProducerIDMapping.Code:
		return fmt.Errorf("transaction coordinator %d: %w", coordinator, txn.ErrInvalidProducerIDMapping)
	case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
		return fmt.Errorf("%w: transaction coordinator %d: %w", errNoCoordinator, coordinator, kerr.ErrorForCode(code))
	}
	return fmt.Errorf("transaction coordinator %d: %w", coordinator, kerr.ErrorForCode(code))
}
