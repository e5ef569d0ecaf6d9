package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Key and value versions of the __consumer_offsets records this package
// writes. The package doc documents the byte layouts ("__consumer_offsets
// record formats").
const (
	offsetCommitKeyVersion    int16 = 1
	groupMetadataKeyVersion   int16 = 2
	offsetCommitValueVersion  int16 = 3
	groupMetadataValueVersion int16 = 3
)

// errCorruptRecord is wrapped by every decoding failure.
var errCorruptRecord = errors.New("corrupt __consumer_offsets record")

// offsetKey identifies one committed offset: Kafka's offset commit key.
type offsetKey struct {
	Group     string
	Topic     string
	Partition int32
}

// offsetValue is Kafka's offset commit value (version 3).
type offsetValue struct {
	Offset          int64
	LeaderEpoch     int32
	Metadata        string
	CommitTimestamp int64 // milliseconds since the Unix epoch
}

// groupMetadataValue is Kafka's group metadata value (version 3).
type groupMetadataValue struct {
	ProtocolType       string
	Generation         int32
	Protocol           *string
	Leader             *string
	CurrentStateMillis int64 // when the group entered its current state
	Members            []memberMetadataValue
}

// memberMetadataValue is one member inside a group metadata value.
type memberMetadataValue struct {
	MemberID         string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	RebalanceTimeout int32 // milliseconds
	SessionTimeout   int32 // milliseconds
	Subscription     []byte
	Assignment       []byte
}

func encodeOffsetKey(key offsetKey) []byte {
	out := binary.BigEndian.AppendUint16(nil, uint16(offsetCommitKeyVersion))
	out = appendString(out, key.Group)
	out = appendString(out, key.Topic)
	return binary.BigEndian.AppendUint32(out, uint32(key.Partition))
}

func encodeGroupKey(group string) []byte {
	out := binary.BigEndian.AppendUint16(nil, uint16(groupMetadataKeyVersion))
	return appendString(out, group)
}

func encodeOffsetValue(value offsetValue) []byte {
	out := binary.BigEndian.AppendUint16(nil, uint16(offsetCommitValueVersion))
	out = binary.BigEndian.AppendUint64(out, uint64(value.Offset))
	out = binary.BigEndian.AppendUint32(out, uint32(value.LeaderEpoch))
	out = appendString(out, value.Metadata)
	return binary.BigEndian.AppendUint64(out, uint64(value.CommitTimestamp))
}

func encodeGroupValue(value groupMetadataValue) []byte {
	out := binary.BigEndian.AppendUint16(nil, uint16(groupMetadataValueVersion))
	out = appendString(out, value.ProtocolType)
	out = binary.BigEndian.AppendUint32(out, uint32(value.Generation))
	out = appendNullableString(out, value.Protocol)
	out = appendNullableString(out, value.Leader)
	out = binary.BigEndian.AppendUint64(out, uint64(value.CurrentStateMillis))
	out = binary.BigEndian.AppendUint32(out, uint32(len(value.Members)))
	for _, member := range value.Members {
		out = appendString(out, member.MemberID)
		out = appendNullableString(out, member.InstanceID)
		out = appendString(out, member.ClientID)
		out = appendString(out, member.ClientHost)
		out = binary.BigEndian.AppendUint32(out, uint32(member.RebalanceTimeout))
		out = binary.BigEndian.AppendUint32(out, uint32(member.SessionTimeout))
		out = appendBytes(out, member.Subscription)
		out = appendBytes(out, member.Assignment)
	}
	return out
}

// decodedKey is a decoded record key: Offset for an offset commit, or
// Group, with Consumer set (the key version, 3–8) for a consumer group
// record and Member for the per-member ones.
type decodedKey struct {
	Offset   *offsetKey
	Group    string
	Consumer int16
	Member   string
	// Share is the key version of a share group record (11 group epoch,
	// 100 share-partition state, with SharePartition), 0 otherwise.
	Share          int16
	SharePartition ShareKey
}

// decodeKey decodes an offset commit key (versions 0 and 1), a group
// metadata key (version 2) or a consumer group record key (versions 3–8).
func decodeKey(raw []byte) (decodedKey, error) {
	reader := byteReader{buf: raw}
	version := reader.int16()
	switch version {
	case 0, 1:
		key := offsetKey{Group: reader.string(), Topic: reader.string(), Partition: reader.int32()}
		if err := reader.finish("offset commit key"); err != nil {
			return decodedKey{}, err
		}
		return decodedKey{Offset: &key}, nil
	case 2:
		group := reader.string()
		if err := reader.finish("group metadata key"); err != nil {
			return decodedKey{}, err
		}
		return decodedKey{Group: group}, nil
	case consumerGroupMetadataKeyVersion, consumerPartitionMetadataKeyVersion, consumerMemberMetadataKeyVersion,
		consumerTargetMetadataKeyVersion, consumerTargetMemberKeyVersion, consumerCurrentAssignmentKeyVersion:
		group, member, err := decodeConsumerKey(version, &reader)
		if err != nil {
			return decodedKey{}, err
		}
		return decodedKey{Group: group, Consumer: version, Member: member}, nil
	case shareGroupMetadataKeyVersion:
		group := reader.string()
		if err := reader.finish("share group metadata key"); err != nil {
			return decodedKey{}, err
		}
		return decodedKey{Group: group, Share: version}, nil
	case shareStateKeyVersion:
		group, key, err := decodeShareStateKey(&reader)
		if err != nil {
			return decodedKey{}, err
		}
		return decodedKey{Group: group, Share: version, SharePartition: key}, nil
	default:
		if reader.err != nil {
			return decodedKey{}, reader.finish("record key")
		}
		return decodedKey{}, fmt.Errorf("%w: unknown key version %d", errCorruptRecord, version)
	}
}

// decodeOffsetValue decodes offset commit value versions 1 and 3 (the ones
// Kafka 2.1+ writes); version 1's expire timestamp is read and ignored.
func decodeOffsetValue(raw []byte) (offsetValue, error) {
	reader := byteReader{buf: raw}
	version := reader.int16()
	value := offsetValue{LeaderEpoch: -1}
	switch version {
	case 1:
		value.Offset = reader.int64()
		value.Metadata = reader.string()
		value.CommitTimestamp = reader.int64()
		reader.int64() // expire timestamp
	case 3:
		value.Offset = reader.int64()
		value.LeaderEpoch = reader.int32()
		value.Metadata = reader.string()
		value.CommitTimestamp = reader.int64()
	default:
		if reader.err == nil {
			return value, fmt.Errorf("%w: unsupported offset value version %d", errCorruptRecord, version)
		}
	}
	return value, reader.finish("offset commit value")
}

// decodeGroupValue decodes a group metadata value of version 3.
func decodeGroupValue(raw []byte) (groupMetadataValue, error) {
	reader := byteReader{buf: raw}
	version := reader.int16()
	if reader.err == nil && version != groupMetadataValueVersion {
		return groupMetadataValue{}, fmt.Errorf("%w: unsupported group metadata value version %d", errCorruptRecord, version)
	}
	value := groupMetadataValue{
		ProtocolType:       reader.string(),
		Generation:         reader.int32(),
		Protocol:           reader.nullableString(),
		Leader:             reader.nullableString(),
		CurrentStateMillis: reader.int64(),
	}
	count := reader.int32()
	if count < 0 || int(count) > len(reader.buf) {
		reader.fail()
		count = 0
	}
	for range count {
		value.Members = append(value.Members, memberMetadataValue{
			MemberID:         reader.string(),
			InstanceID:       reader.nullableString(),
			ClientID:         reader.string(),
			ClientHost:       reader.string(),
			RebalanceTimeout: reader.int32(),
			SessionTimeout:   reader.int32(),
			Subscription:     reader.bytes(),
			Assignment:       reader.bytes(),
		})
	}
	return value, reader.finish("group metadata value")
}

func appendString(out []byte, value string) []byte {
	if len(value) > math.MaxInt16 {
		value = value[:math.MaxInt16]
	}
	out = binary.BigEndian.AppendUint16(out, uint16(len(value)))
	return append(out, value...)
}

func appendNullableString(out []byte, value *string) []byte {
	if value == nil {
		return binary.BigEndian.AppendUint16(out, 0xffff)
	}
	return appendString(out, *value)
}

func appendBytes(out []byte, value []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(value)))
	return append(out, value...)
}

// byteReader reads big-endian Kafka primitives; after the first short read
// every call returns zero values and err stays set.
type byteReader struct {
	buf []byte
	err error
}

func (r *byteReader) fail() {
	if r.err == nil {
		r.err = errCorruptRecord
	}
	r.buf = nil
}

func (r *byteReader) take(size int) []byte {
	if r.err != nil || size < 0 || size > len(r.buf) {
		r.fail()
		return nil
	}
	out := r.buf[:size]
	r.buf = r.buf[size:]
	return out
}

func (r *byteReader) int16() int16 {
	if raw := r.take(2); raw != nil {
		return int16(binary.BigEndian.Uint16(raw))
	}
	return 0
}

func (r *byteReader) int32() int32 {
	if raw := r.take(4); raw != nil {
		return int32(binary.BigEndian.Uint32(raw))
	}
	return 0
}

func (r *byteReader) int64() int64 {
	if raw := r.take(8); raw != nil {
		return int64(binary.BigEndian.Uint64(raw))
	}
	return 0
}

func (r *byteReader) string() string {
	length := r.int16()
	return string(r.take(int(length)))
}

func (r *byteReader) nullableString() *string {
	length := r.int16()
	if r.err != nil || length == -1 {
		return nil
	}
	value := string(r.take(int(length)))
	return &value
}

func (r *byteReader) bytes() []byte {
	length := r.int32()
	if r.err != nil || length == -1 {
		return nil
	}
	raw := r.take(int(length))
	if raw == nil {
		return nil
	}
	return append([]byte{}, raw...)
}

// finish reports a short read, or trailing bytes, as a corrupt record.
// Trailing bytes are tolerated: newer Kafka versions append tagged fields.
func (r *byteReader) finish(what string) error {
	if r.err != nil {
		return fmt.Errorf("%w: truncated %s", errCorruptRecord, what)
	}
	return nil
}
