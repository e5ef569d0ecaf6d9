package bench

// The null server: the physical limit's stand-in in BenchmarkProduceLimit.
// It speaks just enough Kafka for a franz-go producer (ApiVersions,
// Metadata, CreateTopics, InitProducerId, Produce) and answers a Produce
// after reading the frame and walking the batch headers for their record
// counts — no decoding of records, no CRC, no storage, no copies beyond
// the socket read. What a broker spends per GB above it is what storing
// and checking cost. kfake with BlackholeProduce (the `ceiling`) is not
// this: it decodes every request with kmsg.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/wire"
)

// nullProduceMaxVersion is the highest Produce version the null server
// advertises: v13 names topics by id, which it does not track.
const nullProduceMaxVersion = 12

// nullServer is the null server. Its partitions map (topic name → next
// offset per partition) is guarded by mu; each connection has one
// goroutine that reads, answers and writes in order.
type nullServer struct {
	listener net.Listener
	mu       sync.Mutex
	topics   map[string][]int64
	wg       sync.WaitGroup
}

// startNullServer listens on a loopback port and serves until close.
func startNullServer() (*nullServer, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &nullServer{listener: listener, topics: map[string][]int64{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer conn.Close()
				if err := s.serve(conn); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					fmt.Printf("null server: %v\n", err)
				}
			}()
		}
	}()
	return s, nil
}

func (s *nullServer) addr() string { return s.listener.Addr().String() }

func (s *nullServer) close() error {
	err := s.listener.Close()
	return err
}

// serve answers one connection's requests in order.
func (s *nullServer) serve(conn net.Conn) error {
	reader := wire.FrameReader{R: bufio.NewReaderSize(conn, 64<<10), MaxSize: 200 << 20}
	writer := bufio.NewWriterSize(conn, 64<<10)
	var frame, out []byte
	for {
		var err error
		frame, err = reader.Next(frame[:0])
		if err != nil {
			return err
		}
		header, body, err := wire.ParseRequestHeader(frame)
		if err != nil {
			return err
		}
		response, err := s.answer(header, body)
		if err != nil {
			return fmt.Errorf("api %d v%d: %w", header.APIKey, header.APIVersion, err)
		}
		if response == nil {
			continue // acks=0
		}
		out = out[:0]
		out = append(out, 0, 0, 0, 0)
		out = binary.BigEndian.AppendUint32(out, uint32(header.CorrelationID))
		if response.IsFlexible() && header.APIKey != int16(kmsg.ApiVersions) {
			out = append(out, 0) // empty tagged fields of response header v1
		}
		out = response.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := writer.Write(out); err != nil {
			return err
		}
		if reader.R.(*bufio.Reader).Buffered() == 0 {
			if err := writer.Flush(); err != nil {
				return err
			}
		}
	}
}

// answer builds the response to one request; Produce is walked without
// kmsg, everything else is decoded with it (they are rare).
func (s *nullServer) answer(header wire.RequestHeader, body []byte) (kmsg.Response, error) {
	if header.APIKey == int16(kmsg.Produce) {
		return s.produce(header.APIVersion, body)
	}
	request := kmsg.RequestForKey(header.APIKey)
	if request == nil {
		return nil, errors.New("unknown api")
	}
	request.SetVersion(header.APIVersion)
	if err := request.ReadFrom(body); err != nil {
		return nil, err
	}
	switch request := request.(type) {
	case *kmsg.ApiVersionsRequest:
		response := request.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, api := range []struct {
			key      kmsg.Key
			min, max int16
		}{{kmsg.Produce, 3, nullProduceMaxVersion}, {kmsg.Metadata, 0, 12}, {kmsg.ApiVersions, 0, 3},
			{kmsg.CreateTopics, 0, 7}, {kmsg.InitProducerID, 0, 4}} {
			key := kmsg.NewApiVersionsResponseApiKey()
			key.ApiKey, key.MinVersion, key.MaxVersion = int16(api.key), api.min, api.max
			response.ApiKeys = append(response.ApiKeys, key)
		}
		return response, nil
	case *kmsg.CreateTopicsRequest:
		response := request.ResponseKind().(*kmsg.CreateTopicsResponse)
		s.mu.Lock()
		for _, topic := range request.Topics {
			if _, ok := s.topics[topic.Topic]; !ok {
				s.topics[topic.Topic] = make([]int64, topic.NumPartitions)
			}
			created := kmsg.NewCreateTopicsResponseTopic()
			created.Topic, created.NumPartitions, created.ReplicationFactor = topic.Topic, topic.NumPartitions, 1
			response.Topics = append(response.Topics, created)
		}
		s.mu.Unlock()
		return response, nil
	case *kmsg.MetadataRequest:
		response := request.ResponseKind().(*kmsg.MetadataResponse)
		host, port, _ := net.SplitHostPort(s.addr())
		broker := kmsg.NewMetadataResponseBroker()
		broker.NodeID, broker.Host = 0, host
		fmt.Sscan(port, &broker.Port)
		response.Brokers, response.ControllerID = append(response.Brokers, broker), 0
		s.mu.Lock()
		for _, requested := range request.Topics {
			topic := kmsg.NewMetadataResponseTopic()
			topic.Topic = requested.Topic
			offsets, ok := s.topics[*requested.Topic]
			if !ok {
				topic.ErrorCode = 3 // UNKNOWN_TOPIC_OR_PARTITION
			}
			topic.TopicID[0] = 1
			for i := range offsets {
				partition := kmsg.NewMetadataResponseTopicPartition()
				partition.Partition, partition.Leader = int32(i), 0
				partition.Replicas, partition.ISR = []int32{0}, []int32{0}
				topic.Partitions = append(topic.Partitions, partition)
			}
			response.Topics = append(response.Topics, topic)
		}
		s.mu.Unlock()
		return response, nil
	case *kmsg.InitProducerIDRequest:
		response := request.ResponseKind().(*kmsg.InitProducerIDResponse)
		response.ProducerID, response.ProducerEpoch = 1, 0
		return response, nil
	}
	return nil, errors.New("not served")
}

// produce answers a Produce from the batch headers alone.
func (s *nullServer) produce(version int16, body []byte) (kmsg.Response, error) {
	request, err := wire.ParseProduceRequest(body, version)
	if err != nil {
		return nil, err
	}
	response := kmsg.NewPtrProduceResponse()
	response.Version = version
	topics := request.Topics()
	s.mu.Lock()
	defer s.mu.Unlock()
	for topics.Next() {
		name, _, partitions := topics.Topic()
		offsets := s.topics[string(name)]
		answered := kmsg.NewProduceResponseTopic()
		answered.Topic = string(name)
		for partitions.Next() {
			index, records := partitions.Partition()
			part := kmsg.NewProduceResponseTopicPartition()
			part.Partition = index
			if int(index) >= len(offsets) {
				part.ErrorCode = 3 // UNKNOWN_TOPIC_OR_PARTITION
			} else {
				part.BaseOffset = offsets[index]
				err := wire.ForEachBatch(records, func(batch wire.BatchView) error {
					offsets[index] += int64(batch.LastOffsetDelta()) + 1
					return nil
				})
				if err != nil {
					return nil, err
				}
			}
			answered.Partitions = append(answered.Partitions, part)
		}
		if err := partitions.Err(); err != nil {
			return nil, err
		}
		response.Topics = append(response.Topics, answered)
	}
	if err := topics.Err(); err != nil {
		return nil, err
	}
	if request.Acks == 0 {
		return nil, nil
	}
	return response, nil
}

// The null server takes an idempotent producer's records on many
// partitions and answers each batch at the offsets it would have had: the
// producer sees every record acknowledged, in order per partition.
func TestNullServerAcknowledges(t *testing.T) {
	server, err := startNullServer()
	if err != nil {
		t.Fatal(err)
	}
	defer server.close()
	if err := createBenchTopic(server.addr(), 12); err != nil {
		t.Fatal(err)
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(server.addr()), kgo.DefaultProduceTopic(benchTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next := map[int32]int64{}
	for i := range 3000 {
		result := client.ProduceSync(ctx, &kgo.Record{Value: recordValue[:64+i%64]})
		record, err := result.First()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if record.Offset != next[record.Partition] {
			t.Fatalf("record %d on partition %d at offset %d, want %d", i, record.Partition, record.Offset, next[record.Partition])
		}
		next[record.Partition]++
	}
	if len(next) < 2 {
		t.Errorf("records reached %d partitions, want them spread", len(next))
	}
}
