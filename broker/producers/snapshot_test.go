package producers

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/broker/storage"
)

// richLog builds a log with several producers: a full window, a window that
// wrapped around the ring, an open transaction, a closed one, an epoch bump.
func richLog(t *testing.T, clock *fakeClock) *testLog {
	t.Helper()
	log := &testLog{state: newTestState(clock)}
	for i := int32(0); i < 8; i++ {
		mustProduce(t, log, batch(1, 0, 3*i, 3))
		clock.now = clock.now.Add(time.Second)
	}
	mustProduce(t, log, batch(2, 4, 0, 1))
	txn := batch(3, 1, 0, 2)
	txn.Transactional = true
	mustProduce(t, log, txn)
	closed := batch(4, 0, 0, 1)
	closed.Transactional = true
	mustProduce(t, log, closed)
	log.state.ApplyMarker(Marker{ProducerID: 4, ProducerEpoch: 0, CoordinatorEpoch: 6, Offset: log.next, Commit: true})
	log.next++
	mustProduce(t, log, batch(5, 0, 0, 1))
	mustProduce(t, log, batch(5, 1, 0, 2))
	return log
}

func TestSnapshotRoundTrip(t *testing.T) {
	clock := &fakeClock{now: time.Unix(5000, 0)}
	log := richLog(t, clock)
	dir := t.TempDir()
	if err := log.state.WriteSnapshot(dir, log.next); err != nil {
		t.Fatal(err)
	}
	restored, load, err := LoadLatestSnapshot(dir, log.next, Options{Now: clock.Now, ExpirationAge: time.Hour})
	if err != nil || !load.Found || load.Offset != log.next || len(load.Skipped) != 0 {
		t.Fatalf("load: %+v, %v", load, err)
	}
	if got, want := dumpState(restored), dumpState(log.state); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored state differs:\n got  %+v\n want %+v", got, want)
	}
	if !reflect.DeepEqual(restored.Producers(), log.state.Producers()) {
		t.Fatalf("Producers() differ after round trip")
	}
	// Encoding is deterministic: the restored state encodes to the file's bytes.
	file, err := os.ReadFile(filepath.Join(dir, SnapshotFileName(log.next)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(restored.encodeSnapshot(log.next, 0), file) {
		t.Fatalf("re-encoding the restored state gives different bytes")
	}
}

// TestSnapshotKeepsIdleClock: a producer's idle time survives a restart
// (it is not reset by loading), and a replayed producer counts as active.
func TestSnapshotKeepsIdleClock(t *testing.T) {
	clock := &fakeClock{now: time.Unix(5000, 0)}
	options := Options{Now: clock.Now, ExpirationAge: time.Hour}
	log := &testLog{state: NewPartitionState(options)}
	dir := t.TempDir()
	mustProduce(t, log, batch(1, 0, 0, 1))
	if err := log.state.WriteSnapshot(dir, log.next); err != nil { // stamps producer 1 at 5000 s
		t.Fatal(err)
	}
	clock.now = clock.now.Add(40 * time.Minute)
	mustProduce(t, log, batch(2, 0, 0, 1))
	restored, load, err := LoadLatestSnapshot(dir, log.next, options)
	if err != nil || !load.Found {
		t.Fatalf("load: %+v %v", load, err)
	}
	for _, b := range log.batches[1:] {
		restored.Replay(b)
	}
	if dropped := restored.ExpireIdle(); dropped != 0 { // stamps producer 2 at 5000 s + 40 min
		t.Fatalf("dropped %d at 40 minutes", dropped)
	}
	clock.now = clock.now.Add(20*time.Minute - time.Millisecond)
	if dropped := restored.ExpireIdle(); dropped != 0 {
		t.Fatalf("dropped %d just before the expiration age", dropped)
	}
	clock.now = clock.now.Add(time.Millisecond)
	if dropped := restored.ExpireIdle(); dropped != 1 || restored.Producers()[0].ProducerID != 2 {
		t.Fatalf("dropped %d at the expiration age, producers %+v; want producer 1 gone", dropped, restored.Producers())
	}
}

// TestRestartDetectsRetries is the seed's scenario: the broker writes a
// batch, the ack is lost, the broker restarts, the producer retries → one
// copy, answered with the original offsets.
func TestRestartDetectsRetries(t *testing.T) {
	clock := &fakeClock{now: time.Unix(5000, 0)}
	options := Options{Now: clock.Now, ExpirationAge: time.Hour}
	log := &testLog{state: NewPartitionState(options)}
	dir := t.TempDir()
	for i := int32(0); i < 4; i++ {
		mustProduce(t, log, batch(1, 0, 2*i, 2))
	}
	snapshotOffset := log.next
	if err := log.state.WriteSnapshot(dir, snapshotOffset); err != nil {
		t.Fatal(err)
	}
	for i := int32(4); i < 7; i++ {
		mustProduce(t, log, batch(1, 0, 2*i, 2))
	}
	mustProduce(t, log, batch(2, 0, 0, 5)) // a producer only in the replayed part
	before := dumpState(log.state)

	// Restart: the snapshot plus the headers after it.
	restored, load, err := LoadLatestSnapshot(dir, log.next, options)
	if err != nil || load.Offset != snapshotOffset {
		t.Fatalf("load: %+v %v", load, err)
	}
	for _, b := range log.batches {
		if b.FirstOffset >= load.Offset {
			restored.Replay(b)
		}
	}
	// Replaying an overlapping range again changes nothing.
	for _, b := range log.batches {
		restored.Replay(b)
	}
	if after := dumpState(restored); !reflect.DeepEqual(after, before) {
		t.Fatalf("state after restart differs:\n got  %+v\n want %+v", after, before)
	}
	log.state = restored
	lastWritten := log.batches[len(log.batches)-2]
	verdict, written, err := log.produce(batch(1, 0, 12, 2))
	if err != nil || written || !verdict.Duplicate || verdict.FirstOffset != lastWritten.FirstOffset {
		t.Fatalf("retry after restart: %+v written %v err %v, want duplicate at %d", verdict, written, err, lastWritten.FirstOffset)
	}
	if _, err := restored.Check(batch(1, 0, 15, 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after restart: %v", err)
	}
	mustProduce(t, log, batch(1, 0, 14, 1))
}

// corruptions each damage a valid snapshot file in one way.
var corruptions = map[string]func(data []byte) []byte{
	"flipped byte":   func(d []byte) []byte { d[len(d)-3] ^= 0x40; return d },
	"truncated":      func(d []byte) []byte { return d[:len(d)-7] },
	"empty":          func(d []byte) []byte { return nil },
	"bad magic":      func(d []byte) []byte { d[0] = 'Y'; return d },
	"trailing bytes": func(d []byte) []byte { return reseal(append(d, 0, 0, 0, 0)) },
	"newer version":  func(d []byte) []byte { binary.BigEndian.PutUint16(d[4:], 2); return reseal(d) },
	"wrong offset":   func(d []byte) []byte { binary.BigEndian.PutUint64(d[12:], 1); return reseal(d) },
	"huge count":     func(d []byte) []byte { binary.BigEndian.PutUint32(d[20:], 1<<31); return reseal(d) },
	"six batches":    func(d []byte) []byte { d[snapshotHeaderSize+10] = 6; return reseal(d) },
	"negative epoch": func(d []byte) []byte { d[snapshotHeaderSize+8] = 0x80; return reseal(d) },
}

// reseal recomputes the CRC so that a corruption past it is caught by the
// field checks, not the CRC.
func reseal(d []byte) []byte {
	binary.BigEndian.PutUint32(d[8:], crc32.Checksum(d[12:], castagnoli))
	return d
}

func TestCorruptSnapshotFallsBackToOlder(t *testing.T) {
	clock := &fakeClock{now: time.Unix(5000, 0)}
	options := Options{Now: clock.Now}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			log := richLog(t, clock)
			older := dumpState(log.state)
			olderOffset := log.next
			if err := log.state.WriteSnapshot(dir, olderOffset); err != nil {
				t.Fatal(err)
			}
			mustProduce(t, log, batch(9, 0, 0, 1))
			if err := log.state.WriteSnapshot(dir, log.next); err != nil {
				t.Fatal(err)
			}
			newest := filepath.Join(dir, SnapshotFileName(log.next))
			data, err := os.ReadFile(newest)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(newest, corrupt(data), 0o644); err != nil {
				t.Fatal(err)
			}
			state, load, err := LoadLatestSnapshot(dir, log.next, options)
			if err != nil {
				t.Fatal(err)
			}
			if !load.Found || load.Offset != olderOffset || len(load.Skipped) != 1 || load.Skipped[0].Path != newest {
				t.Fatalf("load %+v, want the older snapshot at %d after skipping %s", load, olderOffset, newest)
			}
			if !errors.Is(load.Skipped[0].Reason, errCorruptSnapshot) {
				t.Fatalf("skip reason %v does not say corrupt", load.Skipped[0].Reason)
			}
			if got := dumpState(state); !reflect.DeepEqual(got, older) {
				t.Fatalf("fallback state differs from the older snapshot")
			}
		})
	}
}

func TestAllSnapshotsCorruptGivesEmptyState(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SnapshotFileName(10)), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	state, load, err := LoadLatestSnapshot(dir, 100, Options{})
	if err != nil || load.Found || len(load.Skipped) != 1 || state.Len() != 0 {
		t.Fatalf("load %+v err %v len %d: want empty state, one skipped", load, err, state.Len())
	}
	state, load, err = LoadLatestSnapshot(filepath.Join(dir, "missing"), 100, Options{})
	if err != nil || load.Found || state.Len() != 0 {
		t.Fatalf("missing dir: load %+v err %v", load, err)
	}
}

func TestSnapshotRetentionAndTruncation(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{now: time.Unix(5000, 0)}
	log := richLog(t, clock)
	// A crash during an earlier write left a temporary file.
	stray := filepath.Join(dir, SnapshotFileName(3)+".tmp")
	if err := os.WriteFile(stray, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, offset := range []int64{10, 20, 30, 40} {
		if err := log.state.WriteSnapshot(dir, offset); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustList(t, dir); !slices.Equal(got, []int64{40, 30}) {
		t.Fatalf("snapshots %v, want [40 30]", got)
	}
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stray temporary file still there: %v", err)
	}
	// maxOffset below the newest snapshot: the older one is used.
	if _, load, err := LoadLatestSnapshot(dir, 35, Options{}); err != nil || load.Offset != 30 {
		t.Fatalf("load at most 35: %+v %v", load, err)
	}
	// Truncation to 30 removes 40, keeps 30.
	if err := RemoveSnapshotsAbove(dir, 30, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := mustList(t, dir); !slices.Equal(got, []int64{30}) {
		t.Fatalf("after truncation to 30: %v, want [30]", got)
	}
	if err := log.state.WriteSnapshot(dir, -1); err == nil {
		t.Fatalf("negative offset accepted")
	}
}

func mustList(t *testing.T, dir string) []int64 {
	t.Helper()
	offsets, err := listSnapshots(storage.OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return offsets
}

func TestSnapshotFileName(t *testing.T) {
	if got := SnapshotFileName(1234); got != "00000000000000001234.snapshot" {
		t.Fatalf("SnapshotFileName(1234) = %q", got)
	}
	for _, name := range []string{"1234.snapshot", "0000000000000000123a.snapshot", "00000000000000001234.snapshot.tmp", "-0000000000000001234.snapshot"} {
		if _, ok := parseSnapshotFileName(name); ok {
			t.Errorf("parsed %q as a snapshot name", name)
		}
	}
}

// TestDecodeRandomBytesNeverPanics feeds mutated snapshots to the decoder.
func TestDecodeRandomBytesNeverPanics(t *testing.T) {
	clock := &fakeClock{now: time.Unix(5000, 0)}
	valid := richLog(t, clock).state.encodeSnapshot(99, 5000)
	random := rand.New(rand.NewSource(7))
	for i := 0; i < 3000; i++ {
		data := slices.Clone(valid)
		for flips := 1 + random.Intn(4); flips > 0; flips-- {
			data[random.Intn(len(data))] = byte(random.Intn(256))
		}
		data = data[:random.Intn(len(data)+1)]
		if random.Intn(2) == 0 && len(data) >= snapshotHeaderSize {
			reseal(data)
		}
		if _, _, err := decodeSnapshot(data, Options{}); err == nil && len(data) != len(valid) {
			t.Fatalf("decoded %d of %d bytes without error", len(data), len(valid))
		}
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	clock := &fakeClock{now: time.Unix(5000, 0)}
	f.Add(NewPartitionState(Options{}).encodeSnapshot(0, 0))
	state := NewPartitionState(Options{Now: clock.Now})
	state.Update(batch(1, 0, 0, 3))
	f.Add(state.encodeSnapshot(3, 5000))
	f.Fuzz(func(t *testing.T, data []byte) {
		decoded, offset, err := decodeSnapshot(data, Options{})
		if err != nil {
			return
		}
		if again := decoded.encodeSnapshot(offset, 0); !slices.Equal(again, data) {
			t.Fatalf("accepted snapshot does not re-encode to the same bytes")
		}
	})
}

// TestTruncationRebuild follows doc.go's recipe for a log truncated to T:
// snapshots above T go, the newest one at or below T is loaded, and the log
// from it to T is replayed. The result equals a state that only ever saw the
// log up to T, so a batch cut off by the truncation is accepted again and
// not mistaken for a duplicate.
func TestTruncationRebuild(t *testing.T) {
	clock := &fakeClock{now: time.Unix(5000, 0)}
	options := Options{Now: clock.Now}
	log := &testLog{state: NewPartitionState(options)}
	dir := t.TempDir()
	for i := int32(0); i < 20; i++ {
		mustProduce(t, log, batch(int64(i%3), 0, 2*(i/3), 2))
		if i == 6 || i == 16 {
			if err := log.state.WriteSnapshot(dir, log.next); err != nil {
				t.Fatal(err)
			}
		}
	}
	truncateAt := log.batches[12].FirstOffset // batches 12.. are gone
	if err := RemoveSnapshotsAbove(dir, truncateAt, options); err != nil {
		t.Fatal(err)
	}
	rebuilt, load, err := LoadLatestSnapshot(dir, truncateAt, options)
	if err != nil || !load.Found || load.Offset != log.batches[7].FirstOffset {
		t.Fatalf("load at most %d: %+v %v", truncateAt, load, err)
	}
	for _, b := range log.batches {
		if b.FirstOffset >= load.Offset && b.FirstOffset < truncateAt {
			rebuilt.Replay(b)
		}
	}
	reference := &testLog{state: NewPartitionState(options)}
	for _, b := range log.batches[:12] {
		mustProduce(t, reference, b)
	}
	if got, want := dumpState(rebuilt), dumpState(reference.state); !reflect.DeepEqual(got, want) {
		t.Fatalf("rebuilt state differs:\n got  %+v\n want %+v", got, want)
	}
	cut := log.batches[12]
	if verdict, err := rebuilt.Check(cut); err != nil || verdict.Duplicate {
		t.Fatalf("batch cut by truncation: %+v %v, want accepted", verdict, err)
	}
}

// A batch without sequences (-1, as the group coordinator writes a
// transactional offset commit) round-trips through a snapshot instead of
// making it look corrupt.
func TestSnapshotKeepsBatchWithoutSequence(t *testing.T) {
	clock := &fakeClock{now: time.Unix(5000, 0)}
	log := &testLog{state: newTestState(clock)}
	commit := Batch{ProducerID: 9, ProducerEpoch: 2, BaseSequence: -1, LastSequence: -1, Transactional: true,
		FirstOffset: 0, LastOffset: 0, MaxTimestamp: 1000}
	log.state.Update(commit)
	log.next = 1
	dir := t.TempDir()
	if err := log.state.WriteSnapshot(dir, log.next); err != nil {
		t.Fatal(err)
	}
	restored, load, err := LoadLatestSnapshot(dir, log.next, Options{Now: clock.Now, ExpirationAge: time.Hour})
	if err != nil || !load.Found || len(load.Skipped) != 0 {
		t.Fatalf("load: %+v, %v", load, err)
	}
	if got, want := dumpState(restored), dumpState(log.state); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored state differs:\n got  %+v\n want %+v", got, want)
	}
}
