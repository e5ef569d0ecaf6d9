package group

import (
	"encoding/binary"
	"fmt"
)

// Share group records in __consumer_offsets (the package doc has their
// layouts). The group's epoch uses Kafka's ShareGroupMetadata key (11);
// the share-partition state has no Kafka counterpart in this topic (Kafka
// keeps it in __share_group_state as ShareSnapshot records), so it takes a
// key version Kafka does not use here.
const (
	shareGroupMetadataKeyVersion int16 = 11
	shareStateKeyVersion         int16 = 100
	// maxShareStateBatches bounds a decoded state's batch count (a state
	// covers at most a few thousand in-flight records).
	maxShareStateBatches = 1 << 20
)

// shareGroupRecord is the share group metadata record: the group epoch.
func shareGroupRecord(group string, epoch int32) StoreRecord {
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = binary.BigEndian.AppendUint32(value, uint32(epoch))
	return StoreRecord{Key: encodeConsumerKey(shareGroupMetadataKeyVersion, group, nil), Value: append(value, 0)}
}

func encodeShareStateKey(group string, key ShareKey) []byte {
	out := binary.BigEndian.AppendUint16(nil, uint16(shareStateKeyVersion))
	out = appendString(out, group)
	out = append(out, key.TopicID[:]...)
	return binary.BigEndian.AppendUint32(out, uint32(key.Partition))
}

// shareStateRecord is one share-partition's state.
func shareStateRecord(group string, key ShareKey, state ShareState) StoreRecord {
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = binary.BigEndian.AppendUint32(value, uint32(state.StateEpoch))
	value = binary.BigEndian.AppendUint32(value, uint32(state.LeaderEpoch))
	value = binary.BigEndian.AppendUint64(value, uint64(state.StartOffset))
	value = binary.BigEndian.AppendUint32(value, uint32(len(state.Batches)))
	for _, b := range state.Batches {
		value = binary.BigEndian.AppendUint64(value, uint64(b.First))
		value = binary.BigEndian.AppendUint64(value, uint64(b.Last))
		value = binary.BigEndian.AppendUint16(value, uint16(b.DeliveryCount))
		value = append(value, byte(b.State))
	}
	return StoreRecord{Key: encodeShareStateKey(group, key), Value: value}
}

func decodeShareStateKey(reader *byteReader) (string, ShareKey, error) {
	group := reader.string()
	var key ShareKey
	copy(key.TopicID[:], reader.take(16))
	key.Partition = reader.int32()
	return group, key, reader.finish("share-partition state key")
}

func decodeShareState(raw []byte) (ShareState, error) {
	reader := byteReader{buf: raw}
	if version := reader.int16(); reader.err == nil && version != 0 {
		return ShareState{}, fmt.Errorf("%w: unsupported share-partition state version %d", errCorruptRecord, version)
	}
	state := ShareState{StateEpoch: reader.int32(), LeaderEpoch: reader.int32(), StartOffset: reader.int64()}
	count := reader.int32()
	if count < 0 || count > maxShareStateBatches || int(count)*19 > len(reader.buf) {
		return ShareState{}, fmt.Errorf("%w: share-partition state with %d batches in %d bytes", errCorruptRecord, count, len(reader.buf))
	}
	state.Batches = make([]ShareStateBatch, 0, count)
	for range count {
		b := ShareStateBatch{First: reader.int64(), Last: reader.int64(), DeliveryCount: reader.int16()}
		if raw := reader.take(1); len(raw) == 1 {
			b.State = int8(raw[0])
		}
		state.Batches = append(state.Batches, b)
	}
	if err := reader.finish("share-partition state value"); err != nil {
		return ShareState{}, err
	}
	if len(reader.buf) != 0 {
		return ShareState{}, fmt.Errorf("%w: %d bytes after the share-partition state", errCorruptRecord, len(reader.buf))
	}
	return state, nil
}

// shareReplay accumulates one share group's records.
type shareReplay struct {
	epoch  int32
	states map[ShareKey]ShareState
}

func (s *replayState) shareFor(group string) *shareReplay {
	replay := s.shares[group]
	if replay == nil {
		replay = &shareReplay{states: map[ShareKey]ShareState{}}
		s.shares[group] = replay
	}
	return replay
}

// applyShareRecord replays a share group record (key already decoded).
func (s *replayState) applyShareRecord(key decodedKey, value []byte) error {
	if key.Share == shareGroupMetadataKeyVersion {
		if value == nil {
			delete(s.shares, key.Group)
			return nil
		}
		reader, err := valueReader(value, "share group metadata")
		if err != nil {
			return err
		}
		epoch := reader.int32()
		reader.skipTags()
		if err := reader.finish("share group metadata"); err != nil {
			return err
		}
		s.shareFor(key.Group).epoch = epoch
		return nil
	}
	if value == nil {
		if replay := s.shares[key.Group]; replay != nil {
			delete(replay.states, key.SharePartition)
		}
		return nil
	}
	state, err := decodeShareState(value)
	if err != nil {
		return fmt.Errorf("group %q share-partition %x-%d: %w", key.Group, key.SharePartition.TopicID, key.SharePartition.Partition, err)
	}
	s.shareFor(key.Group).states[key.SharePartition] = state
	return nil
}
