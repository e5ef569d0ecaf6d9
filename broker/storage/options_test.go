package storage

import (
	"testing"
)

// A topic's segment.bytes lowered by AlterConfigs reaches the open log: the
// next appends roll segments at the new size.
func TestSetOptionsChangesSegmentSize(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 1 << 30})
	defer l.Close()
	for i := 0; i < 4; i++ {
		mustAppend(t, l, testBatch(t, int32(i), 4, 512, 1000))
	}
	if n := l.SegmentCount(); n != 1 {
		t.Fatalf("%d segments before SetOptions, want 1", n)
	}
	if err := l.SetOptions(Options{SegmentBytes: 4096}); err != nil {
		t.Fatal(err)
	}
	for i := 4; i < 12; i++ {
		mustAppend(t, l, testBatch(t, int32(i), 4, 512, 1000))
	}
	if n := l.SegmentCount(); n < 3 {
		t.Fatalf("%d segments after lowering segment size to 4 KiB, want at least 3", n)
	}
}

func TestSetOptionsRefusesFsyncChange(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{})
	defer l.Close()
	if err := l.SetOptions(Options{Fsync: FsyncPolicy{Mode: FsyncAlways}}); err == nil {
		t.Fatal("changing the fsync policy of an open log was accepted")
	}
	if err := l.SetOptions(Options{RetentionBytes: 1 << 20}); err != nil {
		t.Fatalf("retention change refused: %v", err)
	}
}
