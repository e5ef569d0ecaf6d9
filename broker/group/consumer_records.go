package group

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// Record formats of consumer groups (KIP-848), as Kafka writes them to
// __consumer_offsets; the package doc has the byte layouts
// ("__consumer_offsets record formats"). Keys are not flexible (int16
// version, which is the record type, then int16-length strings); values are
// flexible version 0 (compact strings and arrays with uvarint lengths plus
// one, then a tagged-field section, empty here).
const (
	consumerGroupMetadataKeyVersion     int16 = 3
	consumerPartitionMetadataKeyVersion int16 = 4 // read and ignored
	consumerMemberMetadataKeyVersion    int16 = 5
	consumerTargetMetadataKeyVersion    int16 = 6
	consumerTargetMemberKeyVersion      int16 = 7
	consumerCurrentAssignmentKeyVersion int16 = 8
)

func encodeConsumerKey(version int16, group string, memberID *string) []byte {
	out := binary.BigEndian.AppendUint16(nil, uint16(version))
	out = appendString(out, group)
	if memberID != nil {
		out = appendString(out, *memberID)
	}
	return out
}

// consumerEpochRecord is ConsumerGroupMetadataValue: the group epoch.
func consumerEpochRecord(group string, epoch int32) StoreRecord {
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = binary.BigEndian.AppendUint32(value, uint32(epoch))
	return StoreRecord{Key: encodeConsumerKey(consumerGroupMetadataKeyVersion, group, nil), Value: append(value, 0)}
}

// consumerAssignmentEpochRecord is ConsumerGroupTargetAssignmentMetadataValue.
func consumerAssignmentEpochRecord(group string, epoch int32) StoreRecord {
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = binary.BigEndian.AppendUint32(value, uint32(epoch))
	return StoreRecord{Key: encodeConsumerKey(consumerTargetMetadataKeyVersion, group, nil), Value: append(value, 0)}
}

// consumerMemberRecord is ConsumerGroupMemberMetadataValue.
func consumerMemberRecord(group string, m *consumerMember) StoreRecord {
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = appendCompactNullableString(value, m.instanceID)
	value = appendCompactNullableString(value, m.rackID)
	value = appendCompactString(value, m.clientID)
	value = appendCompactString(value, m.clientHost)
	value = binary.AppendUvarint(value, uint64(len(m.subscribedTopics)+1))
	for _, topic := range m.subscribedTopics {
		value = appendCompactString(value, topic)
	}
	var regex *string
	if m.regex != "" {
		regex = &m.regex
	}
	value = appendCompactNullableString(value, regex)
	value = binary.BigEndian.AppendUint32(value, uint32(int32(m.rebalanceTimeout/time.Millisecond)))
	var assignor *string
	if m.serverAssignor != "" {
		assignor = &m.serverAssignor
	}
	value = appendCompactNullableString(value, assignor)
	return StoreRecord{Key: encodeConsumerKey(consumerMemberMetadataKeyVersion, group, &m.id), Value: append(value, 0)}
}

// consumerTargetRecord is ConsumerGroupTargetAssignmentMemberValue.
func consumerTargetRecord(group string, m *consumerMember) StoreRecord {
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = appendTopicPartitions(value, m.target)
	return StoreRecord{Key: encodeConsumerKey(consumerTargetMemberKeyVersion, group, &m.id), Value: append(value, 0)}
}

// consumerCurrentRecord is ConsumerGroupCurrentMemberAssignmentValue.
func consumerCurrentRecord(group string, m *consumerMember) StoreRecord {
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = binary.BigEndian.AppendUint32(value, uint32(m.memberEpoch))
	value = binary.BigEndian.AppendUint32(value, uint32(m.previousEpoch))
	value = append(value, byte(m.state))
	value = appendTopicPartitions(value, m.assigned)
	value = appendTopicPartitions(value, m.pendingRevocation)
	return StoreRecord{Key: encodeConsumerKey(consumerCurrentAssignmentKeyVersion, group, &m.id), Value: append(value, 0)}
}

// consumerMemberTombstones delete a member's records (current assignment,
// target, metadata: Kafka's order).
func consumerMemberTombstones(group, memberID string) []StoreRecord {
	return []StoreRecord{
		{Key: encodeConsumerKey(consumerCurrentAssignmentKeyVersion, group, &memberID)},
		{Key: encodeConsumerKey(consumerTargetMemberKeyVersion, group, &memberID)},
		{Key: encodeConsumerKey(consumerMemberMetadataKeyVersion, group, &memberID)},
	}
}

// consumerGroupTombstones delete an empty consumer group's own records.
func consumerGroupTombstones(group string) []StoreRecord {
	return []StoreRecord{
		{Key: encodeConsumerKey(consumerTargetMetadataKeyVersion, group, nil)},
		{Key: encodeConsumerKey(consumerPartitionMetadataKeyVersion, group, nil)},
		{Key: encodeConsumerKey(consumerGroupMetadataKeyVersion, group, nil)},
	}
}

func appendTopicPartitions(out []byte, set partitions) []byte {
	topics := set.list()
	out = binary.AppendUvarint(out, uint64(len(topics)+1))
	for _, topic := range topics {
		out = append(out, topic.TopicID[:]...)
		out = binary.AppendUvarint(out, uint64(len(topic.Partitions)+1))
		for _, partition := range topic.Partitions {
			out = binary.BigEndian.AppendUint32(out, uint32(partition))
		}
		out = append(out, 0) // tagged fields
	}
	return out
}

func appendCompactString(out []byte, value string) []byte {
	out = binary.AppendUvarint(out, uint64(len(value)+1))
	return append(out, value...)
}

func appendCompactNullableString(out []byte, value *string) []byte {
	if value == nil {
		return append(out, 0)
	}
	return appendCompactString(out, *value)
}

// decodeConsumerKey decodes the group (and member) of a consumer group
// record key of the given version.
func decodeConsumerKey(version int16, reader *byteReader) (group, member string, err error) {
	group = reader.string()
	if version == consumerMemberMetadataKeyVersion || version == consumerTargetMemberKeyVersion || version == consumerCurrentAssignmentKeyVersion {
		member = reader.string()
	}
	return group, member, reader.finish(fmt.Sprintf("consumer group record key (version %d)", version))
}

// flexReader reads flexible-version fields after the big-endian ones of
// byteReader.
type flexReader struct{ byteReader }

func (r *flexReader) uvarint() int {
	if r.err != nil {
		return 0
	}
	value, n := binary.Uvarint(r.buf)
	if n <= 0 || value > uint64(len(r.buf))+1 {
		r.fail()
		return 0
	}
	r.buf = r.buf[n:]
	return int(value)
}

func (r *flexReader) compactNullableString() *string {
	length := r.uvarint() - 1
	if r.err != nil || length < 0 {
		return nil
	}
	value := string(r.take(length))
	return &value
}

func (r *flexReader) compactString() string {
	if value := r.compactNullableString(); value != nil {
		return *value
	}
	return ""
}

func (r *flexReader) topicPartitions() partitions {
	out := partitions{}
	count := r.uvarint() - 1
	for range max(count, 0) {
		var id [16]byte
		copy(id[:], r.take(16))
		partitionCount := r.uvarint() - 1
		for range max(partitionCount, 0) {
			out.add(id, r.int32())
		}
		r.skipTags()
		if r.err != nil {
			break
		}
	}
	return out
}

// skipTags skips a tagged-field section.
func (r *flexReader) skipTags() {
	count := r.uvarint()
	for range count {
		r.uvarint() // tag
		r.take(r.uvarint())
		if r.err != nil {
			return
		}
	}
}

// valueReader checks a flexible value's version (0) and returns a reader
// positioned after it.
func valueReader(raw []byte, what string) (*flexReader, error) {
	reader := &flexReader{byteReader{buf: raw}}
	if version := reader.int16(); reader.err == nil && version != 0 {
		return nil, fmt.Errorf("%w: unsupported %s version %d", errCorruptRecord, what, version)
	}
	return reader, nil
}

// consumerReplay accumulates the consumer group records of one group.
type consumerReplay struct {
	epoch           *int32
	assignmentEpoch int32
	members         map[string]*consumerMember
	targets         map[string]partitions
	current         map[string]*consumerMember
}

func newConsumerReplay() *consumerReplay {
	return &consumerReplay{members: map[string]*consumerMember{}, targets: map[string]partitions{}, current: map[string]*consumerMember{}}
}

// apply replays one consumer group record (a nil value is a tombstone).
func (r *consumerReplay) apply(version int16, memberID string, value []byte) error {
	if value == nil {
		switch version {
		case consumerGroupMetadataKeyVersion:
			r.epoch = nil
		case consumerMemberMetadataKeyVersion:
			delete(r.members, memberID)
		case consumerTargetMemberKeyVersion:
			delete(r.targets, memberID)
		case consumerCurrentAssignmentKeyVersion:
			delete(r.current, memberID)
		}
		return nil
	}
	reader, err := valueReader(value, "consumer group record value")
	if err != nil {
		return err
	}
	switch version {
	case consumerGroupMetadataKeyVersion:
		epoch := reader.int32()
		r.epoch = &epoch
	case consumerTargetMetadataKeyVersion:
		r.assignmentEpoch = reader.int32()
	case consumerMemberMetadataKeyVersion:
		r.members[memberID] = decodeMemberMetadata(memberID, reader)
	case consumerTargetMemberKeyVersion:
		r.targets[memberID] = reader.topicPartitions()
	case consumerCurrentAssignmentKeyVersion:
		m := &consumerMember{memberEpoch: reader.int32(), previousEpoch: reader.int32()}
		if raw := reader.take(1); raw != nil {
			m.state = memberState(raw[0])
		}
		m.assigned, m.pendingRevocation = reader.topicPartitions(), reader.topicPartitions()
		r.current[memberID] = m
	}
	return reader.finish(fmt.Sprintf("consumer group record value (key version %d)", version))
}

func decodeMemberMetadata(memberID string, reader *flexReader) *consumerMember {
	m := &consumerMember{id: memberID, instanceID: reader.compactNullableString(), rackID: reader.compactNullableString()}
	m.clientID, m.clientHost = reader.compactString(), reader.compactString()
	count := reader.uvarint() - 1
	for range max(count, 0) {
		m.subscribedTopics = append(m.subscribedTopics, reader.compactString())
	}
	slices.Sort(m.subscribedTopics)
	if regex := reader.compactNullableString(); regex != nil {
		m.regex = *regex
	}
	m.rebalanceTimeout = time.Duration(reader.int32()) * time.Millisecond
	if assignor := reader.compactNullableString(); assignor != nil {
		m.serverAssignor = *assignor
	}
	return m
}

// build returns the replayed group, or nil if its metadata record is
// gone (deleted or converted to classic). Members come back with fresh
// session deadlines from now.
func (r *consumerReplay) build(sessionTimeout time.Duration, now time.Time) *consumerGroup {
	if r.epoch == nil {
		return nil
	}
	cg := newConsumerGroup()
	cg.groupEpoch, cg.assignmentEpoch = *r.epoch, r.assignmentEpoch
	for id, m := range r.members {
		if m.regex != "" {
			m.pattern, _ = compileSubscriptionRegex(m.regex) // compiled once before it was stored
		}
		m.target = r.targets[id]
		if m.target == nil {
			m.target = partitions{}
		}
		m.assigned, m.pendingRevocation = partitions{}, partitions{}
		if current, ok := r.current[id]; ok {
			m.memberEpoch, m.previousEpoch, m.state = current.memberEpoch, current.previousEpoch, current.state
			m.assigned, m.pendingRevocation = current.assigned, current.pendingRevocation
		}
		m.sessionDeadline = now.Add(sessionTimeout)
		if m.pendingRevocation.count() > 0 {
			m.revocationDeadline = now.Add(m.rebalanceTimeout)
		}
		cg.members[id] = m
		if m.instanceID != nil {
			cg.staticMembers[*m.instanceID] = id
		}
	}
	return cg
}
