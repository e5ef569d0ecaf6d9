package wire

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// producedPartition and producedTopic are a plain model of what the produce
// view yields, compared against kmsg's decoding of the same bytes.
type producedPartition struct {
	index   int32
	records []byte
}

type producedTopic struct {
	name       []byte
	topicID    [16]byte
	partitions []producedPartition
}

// walkProduce walks a Produce body with the view and collects everything.
func walkProduce(body []byte, version int16) (ProduceRequest, []producedTopic, error) {
	p, err := ParseProduceRequest(body, version)
	if err != nil {
		return p, nil, err
	}
	var topics []producedTopic
	topicIt := p.Topics()
	for topicIt.Next() {
		name, id, partIt := topicIt.Topic()
		topic := producedTopic{name: name, topicID: id}
		for partIt.Next() {
			index, records := partIt.Partition()
			topic.partitions = append(topic.partitions, producedPartition{index, records})
		}
		if err := partIt.Err(); err != nil {
			return p, nil, err
		}
		topics = append(topics, topic)
	}
	return p, topics, topicIt.Err()
}

// sampleProduceRequest builds a kmsg Produce request with several topics,
// a partition holding two concatenated batches, a null records field, an
// empty partition array and (for flexible versions) unknown tagged fields.
func sampleProduceRequest(version int16, transactionalID *string) *kmsg.ProduceRequest {
	batch := sampleBatch()
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.TransactionID = transactionalID
	req.Acks = -1
	req.TimeoutMillis = 30_000
	first := kmsg.NewProduceRequestTopic()
	first.Topic = "orders"
	first.TopicID = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	p0 := kmsg.NewProduceRequestTopicPartition()
	p0.Partition = 0
	p0.Records = append(append([]byte{}, batch...), batch...)
	p1 := kmsg.NewProduceRequestTopicPartition()
	p1.Partition = 7
	p1.Records = nil
	if version >= 9 {
		p1.UnknownTags.Set(3, []byte("partition tag"))
		first.UnknownTags.Set(1, []byte("topic tag"))
		req.UnknownTags.Set(9, []byte("request tag"))
	}
	first.Partitions = []kmsg.ProduceRequestTopicPartition{p0, p1}
	second := kmsg.NewProduceRequestTopic()
	second.Topic = "empty"
	second.TopicID = [16]byte{0xff}
	third := kmsg.NewProduceRequestTopic()
	third.Topic = ""
	p2 := kmsg.NewProduceRequestTopicPartition()
	p2.Partition = 2147483647
	p2.Records = []byte{}
	third.Partitions = []kmsg.ProduceRequestTopicPartition{p2}
	req.Topics = []kmsg.ProduceRequestTopic{first, second, third}
	return req
}

func TestProduceViewMatchesKmsg(t *testing.T) {
	txnID := "txn-1"
	for _, version := range []int16{3, 7, 9, 11, 12, 13} {
		for _, txn := range []*string{nil, &txnID} {
			t.Run(fmt.Sprintf("v%d/txn=%v", version, txn != nil), func(t *testing.T) {
				body := sampleProduceRequest(version, txn).AppendTo(nil)
				oracle := kmsg.NewPtrProduceRequest()
				oracle.Version = version
				if err := oracle.ReadFrom(body); err != nil {
					t.Fatalf("kmsg cannot read its own encoding: %v", err)
				}
				p, topics, err := walkProduce(body, version)
				if err != nil {
					t.Fatalf("walk: %v", err)
				}
				compareProduce(t, oracle, p, topics)
			})
		}
	}
}

func compareProduce(t *testing.T, oracle *kmsg.ProduceRequest, p ProduceRequest, topics []producedTopic) {
	t.Helper()
	if (oracle.TransactionID == nil) != (p.TransactionalID == nil) ||
		(oracle.TransactionID != nil && *oracle.TransactionID != string(p.TransactionalID)) {
		t.Errorf("transactional id: kmsg %v, wire %q", oracle.TransactionID, p.TransactionalID)
	}
	if p.Acks != oracle.Acks || p.TimeoutMillis != oracle.TimeoutMillis || p.Version != oracle.Version {
		t.Errorf("head: wire %d/%d/v%d, kmsg %d/%d/v%d", p.Acks, p.TimeoutMillis, p.Version,
			oracle.Acks, oracle.TimeoutMillis, oracle.Version)
	}
	if len(topics) != len(oracle.Topics) {
		t.Fatalf("topics: wire %d, kmsg %d", len(topics), len(oracle.Topics))
	}
	for i, want := range oracle.Topics {
		got := topics[i]
		if oracle.Version >= 13 {
			if got.name != nil || got.topicID != want.TopicID {
				t.Errorf("topic %d: wire name %q id %x, kmsg id %x", i, got.name, got.topicID, want.TopicID)
			}
		} else if string(got.name) != want.Topic || got.name == nil || got.topicID != ([16]byte{}) {
			t.Errorf("topic %d: wire %q id %x, kmsg %q", i, got.name, got.topicID, want.Topic)
		}
		if len(got.partitions) != len(want.Partitions) {
			t.Fatalf("topic %d partitions: wire %d, kmsg %d", i, len(got.partitions), len(want.Partitions))
		}
		for j, wantPart := range want.Partitions {
			gotPart := got.partitions[j]
			if gotPart.index != wantPart.Partition || !bytes.Equal(gotPart.records, wantPart.Records) ||
				(gotPart.records == nil) != (wantPart.Records == nil) {
				t.Errorf("topic %d partition %d: wire %d/%d bytes (nil %v), kmsg %d/%d bytes (nil %v)", i, j,
					gotPart.index, len(gotPart.records), gotPart.records == nil,
					wantPart.Partition, len(wantPart.Records), wantPart.Records == nil)
			}
		}
	}
}

// Every strict prefix of a valid body must be rejected with an error by a
// full walk, and garbage appended to a valid body must be rejected too.
func TestProduceViewRejectsTruncation(t *testing.T) {
	txnID := "t"
	for _, version := range []int16{3, 9, 13} {
		body := sampleProduceRequest(version, &txnID).AppendTo(nil)
		for n := 0; n < len(body); n++ {
			if _, _, err := walkProduce(body[:n:n], version); err == nil {
				t.Fatalf("v%d: prefix of %d/%d bytes accepted", version, n, len(body))
			} else if !errors.Is(err, ErrProduceMalformed) {
				t.Fatalf("v%d prefix %d: error %v does not wrap ErrProduceMalformed", version, n, err)
			}
		}
		if _, _, err := walkProduce(append(body, 0), version); err == nil {
			t.Fatalf("v%d: trailing byte accepted", version)
		}
	}
}

func TestProduceViewRejectsBadInput(t *testing.T) {
	cases := []struct {
		name    string
		body    []byte
		version int16
	}{
		{"version 2", []byte{0xff, 0xff, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0}, 2},
		{"version 14", []byte{0, 0, 1, 0, 0, 0, 1, 1, 0}, 14},
		{"negative string length", []byte{0xff, 0xfe, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0}, 3},
		{"huge topic count", []byte{0xff, 0xff, 0, 1, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff}, 3},
		{"negative topic count", []byte{0xff, 0xff, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe}, 3},
		{"records length -2", append([]byte{0xff, 0xff, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 'a',
			0, 0, 0, 1, 0, 0, 0, 0}, 0xff, 0xff, 0xff, 0xfe), 3},
		{"overlong uvarint", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := walkProduce(tc.body, tc.version); !errors.Is(err, ErrProduceMalformed) {
				t.Fatalf("got %v, want ErrProduceMalformed", err)
			}
		})
	}
}

func TestProduceViewNullTopicsAndZeroAllocs(t *testing.T) {
	// A null topic array (length -1) walks as no topics.
	body := []byte{0xff, 0xff, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}
	_, topics, err := walkProduce(body, 3)
	if err != nil || len(topics) != 0 {
		t.Fatalf("null topics: %v, %d topics", err, len(topics))
	}
	body = sampleProduceRequest(12, nil).AppendTo(nil)
	var partitions, batches int
	allocs := testing.AllocsPerRun(50, func() {
		partitions, batches = 0, 0
		p, _ := ParseProduceRequest(body, 12)
		topicIt := p.Topics()
		for topicIt.Next() {
			_, _, partIt := topicIt.Topic()
			for partIt.Next() {
				partitions++
				_, records := partIt.Partition()
				batchIt := NewBatchIterator(records)
				for batchIt.Next() {
					if batchIt.Batch().Validate() == nil {
						batches++
					}
				}
			}
		}
	})
	if allocs != 0 {
		t.Errorf("walk allocates %v times per run", allocs)
	}
	if partitions != 3 || batches != 2 {
		t.Errorf("walked %d partitions, %d valid batches; want 3, 2", partitions, batches)
	}
}

func TestBatchIterator(t *testing.T) {
	batch := sampleBatch()
	two := append(append([]byte{}, batch...), batch...)
	var count int
	if err := ForEachBatch(two, func(v BatchView) error {
		count++
		return v.Validate()
	}); err != nil || count != 2 {
		t.Fatalf("two batches: %v, %d", err, count)
	}
	if err := ForEachBatch(nil, func(BatchView) error { return errors.New("called") }); err != nil {
		t.Fatalf("empty blob: %v", err)
	}
	stop := errors.New("stop")
	if err := ForEachBatch(two, func(BatchView) error { return stop }); err != stop {
		t.Fatalf("callback error not returned: %v", err)
	}
	// Any cut inside the second batch is ErrBatchTruncated after one batch.
	for n := len(batch) + 1; n < len(two); n++ {
		count = 0
		err := ForEachBatch(two[:n], func(BatchView) error { count++; return nil })
		if !errors.Is(err, ErrBatchTruncated) || count != 1 {
			t.Fatalf("cut at %d: err %v after %d batches", n, err, count)
		}
	}
	garbage := append(append([]byte{}, batch...), make([]byte, BatchHeaderSize)...)
	if err := ForEachBatch(garbage, func(BatchView) error { return nil }); !errors.Is(err, ErrBatchLength) {
		t.Fatalf("zero garbage: %v", err)
	}
}
