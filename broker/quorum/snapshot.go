package quorum

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// Snapshot format: one JSON object,
//
//	{"v":1,"index":N,"cursor":C,"brokers":[Broker...],"topics":[Topic...]}
//
// brokers by id and topics by name, with the exported field names of
// Broker, Topic and Partition. v is the format version; Restore rejects
// any other. hashicorp/raft's file snapshot store wraps it with its own
// metadata and CRC, so a torn snapshot file is detected there.
const snapshotVersion = 1

type snapshotFile struct {
	Version int      `json:"v"`
	Index   uint64   `json:"index"`
	Cursor  int64    `json:"cursor"`
	Brokers []Broker `json:"brokers"`
	Topics  []Topic  `json:"topics"`
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
	if file.Version != snapshotVersion {
		return nil, fmt.Errorf("quorum: read snapshot: version %d, want %d", file.Version, snapshotVersion)
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
	return img, nil
}
