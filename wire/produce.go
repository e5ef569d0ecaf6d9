package wire

import (
	"errors"
	"fmt"
)

// ErrProduceMalformed wraps every structural error of a Produce request body.
var ErrProduceMalformed = errors.New("malformed produce request")

// Produce request versions the view understands: v3 introduced record batch
// v2 and the transactional id; v9 made the request flexible; v13 replaced the
// topic name with a topic id.
const (
	ProduceMinVersion      = 3
	ProduceMaxVersion      = 13
	produceFlexibleVersion = 9
	produceTopicIDVersion  = 13
)

// ProduceRequest is a zero-copy view over a Produce request body (v3..v13).
//
//	transactional_id  NULLABLE_STRING (COMPACT_ for v9+)
//	acks              INT16
//	timeout_ms        INT32
//	topics            ARRAY (COMPACT_ for v9+) of
//	  name            STRING (v3..v12) | topic_id UUID (v13+)
//	  partitions      ARRAY of
//	    index         INT32
//	    records       NULLABLE_BYTES (COMPACT_ for v9+)
//	    _tagged_fields (v9+)
//	  _tagged_fields  (v9+)
//	_tagged_fields    (v9+)
//
// Every slice it hands out aliases the body passed to ParseProduceRequest.
type ProduceRequest struct {
	Version         int16
	TransactionalID []byte // nil when null
	Acks            int16
	TimeoutMillis   int32

	// topics holds the bytes from the first topic to the end of the body;
	// topicCount is the topic array length (0 for a null array).
	topics     []byte
	topicCount int
}

// ParseProduceRequest parses the fixed head of a Produce request body (up to
// and including the topic array length). Topics and partitions are walked
// lazily by the iterators, which report any later malformation.
func ParseProduceRequest(body []byte, version int16) (ProduceRequest, error) {
	p := ProduceRequest{Version: version}
	if version < ProduceMinVersion || version > ProduceMaxVersion {
		return p, fmt.Errorf("%w: unsupported version %d", ErrProduceMalformed, version)
	}
	flexible := version >= produceFlexibleVersion
	r := Reader{B: body}
	if flexible {
		p.TransactionalID = r.CompactNullableString()
	} else {
		p.TransactionalID = r.NullableString()
	}
	p.Acks = r.Int16()
	p.TimeoutMillis = r.Int32()
	// Each topic takes at least 2 bytes (empty name + empty partition array
	// in flexible encoding needs 1+1+1; v13's uuid needs 16+).
	count := readArrayLen(&r, flexible, 2)
	if r.Err != nil {
		return p, fmt.Errorf("%w: v%d head: %w", ErrProduceMalformed, version, r.Err)
	}
	if count < 0 {
		count = 0
	}
	p.topics = r.B
	p.topicCount = count
	return p, nil
}

// Topics returns an iterator over the request's topics.
func (p *ProduceRequest) Topics() ProduceTopicIterator {
	return ProduceTopicIterator{
		version:   p.Version,
		reader:    Reader{B: p.topics},
		remaining: p.topicCount,
	}
}

// ProduceTopicIterator walks the topics of a Produce request. It allocates
// nothing; Next returns false at the end or on error (check Err).
type ProduceTopicIterator struct {
	version   int16
	reader    Reader
	remaining int

	name       []byte
	topicID    [16]byte
	partitions ProducePartitionIterator
	err        error
}

// Next advances to the next topic. Before returning it checks the topic's
// whole partition array structurally, so the partition iterator it hands out
// is bounded to that topic.
func (it *ProduceTopicIterator) Next() bool {
	if it.err != nil {
		return false
	}
	flexible := it.version >= produceFlexibleVersion
	r := &it.reader
	if it.remaining == 0 {
		if flexible {
			r.SkipTaggedFields()
		}
		if r.Err == nil && len(r.B) != 0 {
			r.Failf("%d trailing bytes", len(r.B))
		}
		if r.Err != nil {
			it.err = fmt.Errorf("%w: v%d end of request: %w", ErrProduceMalformed, it.version, r.Err)
		}
		return false
	}
	it.remaining--
	it.name, it.topicID = nil, [16]byte{}
	if it.version >= produceTopicIDVersion {
		copy(it.topicID[:], r.Span(16))
	} else if flexible {
		it.name = r.CompactString()
	} else {
		it.name = r.String()
	}
	count := readArrayLen(r, flexible, 5) // index + 1-byte compact null records
	start := r.B
	for i := 0; i < count && r.Err == nil; i++ {
		skipProducePartition(r, flexible)
	}
	partitionBytes := start[:len(start)-len(r.B)]
	if flexible {
		r.SkipTaggedFields()
	}
	if r.Err != nil {
		it.err = fmt.Errorf("%w: v%d topic %q: %w", ErrProduceMalformed, it.version, it.name, r.Err)
		return false
	}
	it.partitions = ProducePartitionIterator{
		flexible:  flexible,
		reader:    Reader{B: partitionBytes},
		remaining: max(count, 0),
	}
	return true
}

// Topic returns the current topic: its name (nil for v13+), its id (zero
// before v13) and an iterator over its partitions.
func (it *ProduceTopicIterator) Topic() (name []byte, topicID [16]byte, partitions ProducePartitionIterator) {
	return it.name, it.topicID, it.partitions
}

// Err returns the error that stopped the iteration, or nil.
func (it *ProduceTopicIterator) Err() error { return it.err }

// ProducePartitionIterator walks the partitions of one topic.
type ProducePartitionIterator struct {
	flexible  bool
	reader    Reader
	remaining int

	index   int32
	records []byte
	err     error
}

// Next advances to the next partition.
func (it *ProducePartitionIterator) Next() bool {
	if it.err != nil || it.remaining == 0 {
		return false
	}
	it.remaining--
	r := &it.reader
	it.index, it.records = readProducePartition(r, it.flexible)
	if r.Err != nil {
		it.err = fmt.Errorf("%w: partition: %w", ErrProduceMalformed, r.Err)
		return false
	}
	return true
}

// Partition returns the current partition index and its raw records bytes
// (one or more record batches, aliasing the request; nil when null).
func (it *ProducePartitionIterator) Partition() (index int32, records []byte) {
	return it.index, it.records
}

// Err returns the error that stopped the iteration, or nil.
func (it *ProducePartitionIterator) Err() error { return it.err }

func readProducePartition(r *Reader, flexible bool) (int32, []byte) {
	index := r.Int32()
	var records []byte
	if flexible {
		records = r.CompactNullableBytes()
		r.SkipTaggedFields()
	} else {
		records = r.NullableBytes()
	}
	return index, records
}

func skipProducePartition(r *Reader, flexible bool) {
	readProducePartition(r, flexible)
}

// readArrayLen reads a classic or compact array length.
func readArrayLen(r *Reader, flexible bool, minElem int) int {
	if flexible {
		return r.CompactArrayLen(minElem)
	}
	return r.ArrayLen(minElem)
}

// BatchIterator walks the record batches concatenated in a records blob (the
// records field of a Produce partition, or a segment region). Each batch is
// checked by ParseBatch (header complete, magic 2, length within the blob);
// the CRC is left to BatchView.Validate. Trailing bytes that do not form a
// whole batch are an error.
type BatchIterator struct {
	rest    []byte
	current BatchView
	err     error
}

// NewBatchIterator returns an iterator over the batches in records.
func NewBatchIterator(records []byte) BatchIterator { return BatchIterator{rest: records} }

// Next advances to the next batch.
func (it *BatchIterator) Next() bool {
	if it.err != nil || len(it.rest) == 0 {
		return false
	}
	v, err := ParseBatch(it.rest)
	if err != nil {
		it.err = err
		return false
	}
	it.current = v
	it.rest = it.rest[v.Size():]
	return true
}

// Batch returns the current batch.
func (it *BatchIterator) Batch() BatchView { return it.current }

// Err returns the error that stopped the iteration, or nil.
func (it *BatchIterator) Err() error { return it.err }

// ForEachBatch calls fn for every batch in records and stops at fn's first
// error or at the first malformed batch. An empty blob has no batches.
func ForEachBatch(records []byte, fn func(BatchView) error) error {
	it := NewBatchIterator(records)
	for it.Next() {
		if err := fn(it.Batch()); err != nil {
			return err
		}
	}
	return it.Err()
}
