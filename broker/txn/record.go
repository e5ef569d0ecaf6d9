package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record format versions (see doc.go for the byte layouts).
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

// encodeKey encodes a __transaction_state key.
func encodeKey(transactionalID string) []byte {
	key := kmsg.TxnMetadataKey{Version: keyVersion, TransactionalID: transactionalID}
	return key.AppendTo(nil)
}

// decodeKey decodes a key; only version 0 exists.
func decodeKey(data []byte) (string, error) {
	if len(data) < 2 {
		return "", fmt.Errorf("key of %d bytes: %w", len(data), ErrCorruptRecord)
	}
	if version := int16(binary.BigEndian.Uint16(data)); version != keyVersion {
		return "", fmt.Errorf("key version %d: %w", version, ErrCorruptRecord)
	}
	var key kmsg.TxnMetadataKey
	if err := key.ReadFrom(data); err != nil {
		return "", fmt.Errorf("key: %v: %w", err, ErrCorruptRecord)
	}
	return key.TransactionalID, nil
}

// encodeValue encodes m as a value of version 1.
func encodeValue(m *Metadata) []byte {
	value := kmsg.NewTxnMetadataValue()
	value.Version = valueVersion
	value.ProducerID = m.ProducerID
	value.ProducerEpoch = m.ProducerEpoch
	value.TimeoutMillis = m.TimeoutMs
	value.State = kmsg.TransactionState(m.State)
	value.Topics = []kmsg.TxnMetadataValueTopic{}
	for _, tp := range m.Partitions {
		last := len(value.Topics) - 1
		if last < 0 || value.Topics[last].Topic != tp.Topic {
			value.Topics = append(value.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			last++
		}
		value.Topics[last].Partitions = append(value.Topics[last].Partitions, tp.Partition)
	}
	value.LastUpdateTimestamp = m.LastUpdate
	value.StartTimestamp = m.StartTime
	value.PreviousProducerID = m.PreviousProducerID
	value.NextProducerID = m.NextProducerID
	value.ClientTransactionVersion = m.TransactionVersion
	if len(m.Groups) > 0 {
		value.UnknownTags.Set(tagGroups, encodeGroups(m.Groups))
	}
	if m.LastProducerEpoch != noProducerEpoch {
		value.UnknownTags.Set(tagLastProducerEpoch, binary.BigEndian.AppendUint16(nil, uint16(m.LastProducerEpoch)))
	}
	return value.AppendTo(nil)
}

// decodeValue decodes a value of version 0 or 1 for transactionalID.
func decodeValue(transactionalID string, data []byte) (Metadata, error) {
	if len(data) < 2 {
		return Metadata{}, fmt.Errorf("value of %d bytes: %w", len(data), ErrCorruptRecord)
	}
	if version := int16(binary.BigEndian.Uint16(data)); version < 0 || version > valueVersion {
		return Metadata{}, fmt.Errorf("value version %d: %w", version, ErrCorruptRecord)
	}
	var value kmsg.TxnMetadataValue
	if err := value.ReadFrom(data); err != nil {
		return Metadata{}, fmt.Errorf("value: %v: %w", err, ErrCorruptRecord)
	}
	m := Metadata{
		TransactionalID:    transactionalID,
		ProducerID:         value.ProducerID,
		ProducerEpoch:      value.ProducerEpoch,
		LastProducerEpoch:  noProducerEpoch,
		PreviousProducerID: value.PreviousProducerID,
		NextProducerID:     value.NextProducerID,
		TimeoutMs:          value.TimeoutMillis,
		State:              State(value.State),
		StartTime:          value.StartTimestamp,
		LastUpdate:         value.LastUpdateTimestamp,
		TransactionVersion: value.ClientTransactionVersion,
	}
	if !m.State.valid() || m.State == StatePrepareEpochFence || m.ProducerID < 0 || m.TimeoutMs < 0 {
		return Metadata{}, fmt.Errorf("value: state %d, producer id %d, timeout %d: %w",
			value.State, m.ProducerID, m.TimeoutMs, ErrCorruptRecord)
	}
	for _, topic := range value.Topics {
		for _, partition := range topic.Partitions {
			m.addPartitions([]TopicPartition{{Topic: topic.Topic, Partition: partition}})
		}
	}
	var tagErr error
	value.UnknownTags.Each(func(tag uint32, data []byte) {
		switch tag {
		case tagGroups:
			groups, err := decodeGroups(data)
			if err != nil {
				tagErr = err
			}
			for _, group := range groups {
				m.addGroup(group)
			}
		case tagLastProducerEpoch:
			if len(data) != 2 {
				tagErr = fmt.Errorf("last producer epoch tag of %d bytes: %w", len(data), ErrCorruptRecord)
				return
			}
			m.LastProducerEpoch = int16(binary.BigEndian.Uint16(data))
		}
	})
	return m, tagErr
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
