package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf16"

	"github.com/exactly-eos/exactly/wire"
)

// Record format versions (see "Transaction log records" in the package
// doc for the byte layouts).
const (
	// keyVersion is the only __transaction_state key version.
	keyVersion int16 = 0
	// valueVersion is the value version written: 1, the flexible one,
	// because it has tagged fields for the KIP-890 ids and our extensions.
	// Versions 0 and 1 are read.
	valueVersion int16 = 1
	// tagGroups and tagLastProducerEpoch are this broker's extensions to
	// value version 1, in tagged fields Kafka ignores: the transaction's
	// consumer groups and LastProducerEpoch.
	tagGroups            uint32 = 10000
	tagLastProducerEpoch uint32 = 10001
)

// ErrCorruptRecord: a __transaction_state key or value that cannot be
// decoded. Load fails with it rather than guess.
var ErrCorruptRecord = errors.New("corrupt transaction log record")

// Tags of value version 1 that Kafka defines (KIP-890), each written only
// when not at its default.
const (
	tagPreviousProducerID       uint32 = 0
	tagNextProducerID           uint32 = 1
	tagClientTransactionVersion uint32 = 2
)

// encodeKey encodes a __transaction_state key: version 0, then the
// transactional id as an int16-length string.
func encodeKey(transactionalID string) []byte {
	return wire.AppendString(wire.AppendInt16(nil, keyVersion), transactionalID)
}

// decodeKey decodes a key; only version 0 exists. Bytes after the id are
// ignored, as Kafka's generated readers ignore them.
func decodeKey(data []byte) (string, error) {
	if len(data) < 2 {
		return "", fmt.Errorf("key of %d bytes: %w", len(data), ErrCorruptRecord)
	}
	r := wire.Reader{B: data}
	if version := r.Int16(); version != keyVersion {
		return "", fmt.Errorf("key version %d: %w", version, ErrCorruptRecord)
	}
	id := r.String()
	if r.Err != nil {
		return "", fmt.Errorf("key: %v: %w", r.Err, ErrCorruptRecord)
	}
	return string(id), nil
}

// encodeValue encodes m as a value of version 1 (the layout is in the
// package doc, "Transaction log records"): the fixed fields, the
// participants grouped by topic (m.Partitions is sorted), and the tags that
// are not at their default.
func encodeValue(m *Metadata) []byte {
	b := wire.AppendInt16(nil, valueVersion)
	b = wire.AppendInt64(b, m.ProducerID)
	b = wire.AppendInt16(b, m.ProducerEpoch)
	b = wire.AppendInt32(b, m.TimeoutMs)
	b = append(b, byte(m.State))
	var topics [][]TopicPartition
	for i, tp := range m.Partitions {
		if i == 0 || m.Partitions[i-1].Topic != tp.Topic {
			topics = append(topics, nil)
		}
		topics[len(topics)-1] = append(topics[len(topics)-1], tp)
	}
	b = wire.AppendUvarint(b, uint32(len(topics))+1)
	for _, topic := range topics {
		b = wire.AppendCompactString(b, topic[0].Topic)
		b = wire.AppendUvarint(b, uint32(len(topic))+1)
		for _, tp := range topic {
			b = wire.AppendInt32(b, tp.Partition)
		}
		b = wire.AppendUvarint(b, 0) // the topic's empty tag buffer
	}
	b = wire.AppendInt64(b, m.LastUpdate)
	b = wire.AppendInt64(b, m.StartTime)
	type tag struct {
		tag  uint32
		data []byte
	}
	var tags []tag // in ascending tag order, as the format requires
	if m.PreviousProducerID != noProducerID {
		tags = append(tags, tag{tagPreviousProducerID, wire.AppendInt64(nil, m.PreviousProducerID)})
	}
	if m.NextProducerID != noProducerID {
		tags = append(tags, tag{tagNextProducerID, wire.AppendInt64(nil, m.NextProducerID)})
	}
	if m.TransactionVersion != 0 {
		tags = append(tags, tag{tagClientTransactionVersion, wire.AppendInt16(nil, m.TransactionVersion)})
	}
	if len(m.Groups) > 0 {
		tags = append(tags, tag{tagGroups, encodeGroups(m.Groups)})
	}
	if m.LastProducerEpoch != noProducerEpoch {
		tags = append(tags, tag{tagLastProducerEpoch, wire.AppendInt16(nil, m.LastProducerEpoch)})
	}
	b = wire.AppendUvarint(b, uint32(len(tags)))
	for _, t := range tags {
		b = wire.AppendUvarint(b, t.tag)
		b = wire.AppendUvarint(b, uint32(len(t.data)))
		b = append(b, t.data...)
	}
	return b
}

// decodeValue decodes a value of version 0 or 1 for transactionalID.
// Unknown tags are skipped; bytes after the value are ignored.
func decodeValue(transactionalID string, data []byte) (Metadata, error) {
	if len(data) < 2 {
		return Metadata{}, fmt.Errorf("value of %d bytes: %w", len(data), ErrCorruptRecord)
	}
	r := wire.Reader{B: data}
	version := r.Int16()
	if version < 0 || version > valueVersion {
		return Metadata{}, fmt.Errorf("value version %d: %w", version, ErrCorruptRecord)
	}
	flexible := version >= 1
	m := Metadata{
		TransactionalID:    transactionalID,
		LastProducerEpoch:  noProducerEpoch,
		PreviousProducerID: noProducerID,
		NextProducerID:     noProducerID,
	}
	m.ProducerID = r.Int64()
	m.ProducerEpoch = r.Int16()
	m.TimeoutMs = r.Int32()
	m.State = State(r.Int8())
	partitions := decodeTopics(&r, flexible)
	m.LastUpdate = r.Int64()
	m.StartTime = r.Int64()
	var tagErr error
	if flexible {
		tagErr = decodeValueTags(&r, &m)
	}
	if r.Err != nil {
		return Metadata{}, fmt.Errorf("value: %v: %w", r.Err, ErrCorruptRecord)
	}
	if tagErr != nil {
		return Metadata{}, tagErr
	}
	if !m.State.valid() || m.State == StatePrepareEpochFence || m.ProducerID < 0 || m.TimeoutMs < 0 {
		return Metadata{}, fmt.Errorf("value: state %d, producer id %d, timeout %d: %w",
			int8(m.State), m.ProducerID, m.TimeoutMs, ErrCorruptRecord)
	}
	m.addPartitions(partitions)
	return m, nil
}

// decodeTopics reads the participants: an array (null: none) of topics,
// each a name and an array of partitions; compact encodings with a tag
// buffer per topic when flexible.
func decodeTopics(r *wire.Reader, flexible bool) []TopicPartition {
	var partitions []TopicPartition
	arrayLen := func(minElem int) int {
		if flexible {
			return r.CompactArrayLen(minElem)
		}
		return r.ArrayLen(minElem)
	}
	topics := arrayLen(2)
	for range max(topics, 0) {
		var topic []byte
		if flexible {
			topic = r.CompactString()
		} else {
			topic = r.String()
		}
		count := arrayLen(4)
		for range max(count, 0) {
			partitions = append(partitions, TopicPartition{Topic: string(topic), Partition: r.Int32()})
		}
		if flexible {
			r.SkipTaggedFields()
		}
		if r.Err != nil {
			return nil
		}
	}
	return partitions
}

// decodeValueTags reads a version 1 value's tag buffer into m.
func decodeValueTags(r *wire.Reader, m *Metadata) error {
	count := r.Uvarint()
	for i := uint32(0); i < count && r.Err == nil; i++ {
		tag := r.Uvarint()
		data := r.Span(int(r.Uvarint()))
		if r.Err != nil {
			break
		}
		fixed := func(size int) bool { return len(data) == size }
		switch tag {
		case tagPreviousProducerID, tagNextProducerID:
			if !fixed(8) {
				return fmt.Errorf("value tag %d of %d bytes: %w", tag, len(data), ErrCorruptRecord)
			}
			id := int64(binary.BigEndian.Uint64(data))
			if tag == tagPreviousProducerID {
				m.PreviousProducerID = id
			} else {
				m.NextProducerID = id
			}
		case tagClientTransactionVersion:
			if !fixed(2) {
				return fmt.Errorf("value tag %d of %d bytes: %w", tag, len(data), ErrCorruptRecord)
			}
			m.TransactionVersion = int16(binary.BigEndian.Uint16(data))
		case tagGroups:
			groups, err := decodeGroups(data)
			if err != nil {
				return err
			}
			for _, group := range groups {
				m.addGroup(group)
			}
		case tagLastProducerEpoch:
			if !fixed(2) {
				return fmt.Errorf("last producer epoch tag of %d bytes: %w", len(data), ErrCorruptRecord)
			}
			m.LastProducerEpoch = int16(binary.BigEndian.Uint16(data))
		}
	}
	return nil
}

// encodeGroups encodes groups as a compact array of compact strings:
// uvarint count+1, then per group uvarint length+1 and the bytes.
func encodeGroups(groups []string) []byte {
	data := binary.AppendUvarint(nil, uint64(len(groups))+1)
	for _, group := range groups {
		data = binary.AppendUvarint(data, uint64(len(group))+1)
		data = append(data, group...)
	}
	return data
}

// decodeGroups decodes encodeGroups' format.
func decodeGroups(data []byte) ([]string, error) {
	count, n := binary.Uvarint(data)
	if n <= 0 || count == 0 || count-1 > uint64(len(data)) {
		return nil, fmt.Errorf("groups tag: bad count: %w", ErrCorruptRecord)
	}
	data = data[n:]
	groups := make([]string, 0, count-1)
	for range count - 1 {
		length, n := binary.Uvarint(data)
		if n <= 0 || length == 0 || length-1 > uint64(len(data)-n) {
			return nil, fmt.Errorf("groups tag: bad string length: %w", ErrCorruptRecord)
		}
		groups = append(groups, string(data[n:n+int(length-1)]))
		data = data[n+int(length-1):]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("groups tag: %d trailing bytes: %w", len(data), ErrCorruptRecord)
	}
	return groups, nil
}

// PartitionFor is the __transaction_state partition of a transactional id,
// computed as Kafka does: Utils.abs(transactionalID.hashCode()) %
// partitions, where hashCode is Java's String.hashCode over UTF-16 code
// units and Utils.abs maps math.MinInt32 to 0. partitions below 1 give 0.
// The broker's FindCoordinator uses the same function.
func PartitionFor(transactionalID string, partitions int) int {
	if partitions < 1 {
		return 0
	}
	var hash int32
	for _, unit := range utf16.Encode([]rune(transactionalID)) {
		hash = 31*hash + int32(unit)
	}
	switch {
	case hash == math.MinInt32:
		hash = 0
	case hash < 0:
		hash = -hash
	}
	return int(hash % int32(partitions))
}
