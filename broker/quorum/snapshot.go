package quorum

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// Snapshot format: one JSON object,
//
//	{"v":3,"index":N,"cursor":C,"brokers":[Broker...],"topics":[Topic...],
//	 "next_producer_id":P,"producer_id_brokers":[id...],
//	 "group_configs":{"<group id>":{"<name>":"<value>",...},...}}
//
// brokers by id and topics by name, with the exported field names of
// Broker, Topic and Partition; next_producer_id and producer_id_brokers
// are the producer-id allocation (producerIDState: next, and the reported
// brokers by id); group_configs are the groups' dynamic configs (absent
// when no group has any). v is the format version. Restore reads 3, 2 —
// written before group configs, without group_configs: no group has any —
// and 1 — written before producer-id blocks, without the producer-id
// fields either: next is 0 and no broker has reported, so the blocks skip
// the stripes of the registered brokers until each has reported its floor
// (producer_ids.go), and start above the floors reported. Restore rejects
// any other version, so an earlier binary refuses a newer snapshot instead
// of dropping what it does not know. hashicorp/raft's file snapshot store
// wraps it with its own metadata and CRC, so a torn snapshot file is
// detected there.
const snapshotVersion = 3

// snapshotVersionBeforeGroupConfigs and snapshotVersionBeforePIDs are the
// formats of before group configs and before the producer-id allocation,
// still read.
const (
	snapshotVersionBeforeGroupConfigs = 2
	snapshotVersionBeforePIDs         = 1
)

type snapshotFile struct {
	Version int      `json:"v"`
	Index   uint64   `json:"index"`
	Cursor  int64    `json:"cursor"`
	Brokers []Broker `json:"brokers"`
	Topics  []Topic  `json:"topics"`

	NextProducerID    int64   `json:"next_producer_id"`
	ProducerIDBrokers []int32 `json:"producer_id_brokers,omitempty"`

	GroupConfigs map[string]map[string]string `json:"group_configs,omitempty"`
}

// fsmSnapshot is an immutable image to persist; Persist runs on a raft
// goroutine of its own, concurrently with Apply, which is safe because
// published images are never modified.
type fsmSnapshot struct{ img *Image }

// Snapshot implements raft.FSM.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return fsmSnapshot{img: f.current()}, nil
}

// Restore implements raft.FSM: it replaces the state by the snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	img, err := readSnapshot(rc)
	if err != nil {
		return err
	}
	f.publish(img)
	return nil
}

// Persist implements raft.FSMSnapshot.
func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.img); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s fsmSnapshot) Release() {}

func writeSnapshot(w io.Writer, img *Image) error {
	file := snapshotFile{
		Version: snapshotVersion,
		Index:   img.index,
		Cursor:  img.cursor,
		Brokers: img.Brokers(),
		Topics:  img.Topics(),

		NextProducerID:    img.producerIDs.next,
		ProducerIDBrokers: img.producerIDs.reportedBrokers(),

		GroupConfigs: img.AllGroupConfigs(),
	}
	if err := json.NewEncoder(w).Encode(file); err != nil {
		return fmt.Errorf("quorum: write snapshot: %w", err)
	}
	return nil
}

func readSnapshot(r io.Reader) (*Image, error) {
	var file snapshotFile
	if err := json.NewDecoder(r).Decode(&file); err != nil {
		return nil, fmt.Errorf("quorum: read snapshot: %w", err)
	}
	switch file.Version {
	case snapshotVersion, snapshotVersionBeforeGroupConfigs, snapshotVersionBeforePIDs:
	default:
		return nil, fmt.Errorf("quorum: read snapshot: version %d, want %d, %d or %d", file.Version,
			snapshotVersion, snapshotVersionBeforeGroupConfigs, snapshotVersionBeforePIDs)
	}
	if file.NextProducerID < 0 {
		return nil, fmt.Errorf("quorum: read snapshot: next producer id %d", file.NextProducerID)
	}
	img := emptyImage()
	img.index = file.Index
	img.cursor = file.Cursor
	for _, b := range file.Brokers {
		img.brokers[b.ID] = b
	}
	for i := range file.Topics {
		t := file.Topics[i]
		img.topics[t.Name] = &t
	}
	for id, configs := range file.GroupConfigs {
		if id == "" || len(configs) == 0 {
			return nil, fmt.Errorf("quorum: read snapshot: group configs of group %q: %d", id, len(configs))
		}
		img.groupConfigs[id] = configs
	}
	img.producerIDs.next = file.NextProducerID
	for _, id := range file.ProducerIDBrokers {
		if img.producerIDs.reported == nil {
			img.producerIDs.reported = map[int32]bool{}
		}
		img.producerIDs.reported[id] = true
	}
	return img, nil
}
