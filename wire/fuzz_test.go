package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The fuzz targets assert "an error, never a panic" and, where an oracle
// exists, agreement with kmsg. Seeds are valid inputs.

func FuzzFrameReader(f *testing.F) {
	for _, req := range headerCases() {
		f.Add(frameRequest(kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")), req, 1), int32(1<<16))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, int32(0))
	f.Fuzz(func(t *testing.T, input []byte, maxSize int32) {
		frames := FrameReader{R: bytes.NewReader(input), MaxSize: maxSize}
		var buffer []byte
		consumed := 0
		for {
			frame, err := frames.Next(buffer)
			if err != nil {
				if errors.Is(err, io.EOF) && consumed != len(input) {
					t.Fatalf("EOF after %d of %d bytes", consumed, len(input))
				}
				return
			}
			limit := maxSize
			if limit <= 0 {
				limit = DefaultMaxFrameSize
			}
			if int64(len(frame)) > int64(limit) {
				t.Fatalf("frame of %d bytes over limit %d", len(frame), limit)
			}
			if !bytes.Equal(frame, input[consumed+4:consumed+4+len(frame)]) {
				t.Fatalf("frame content differs from input")
			}
			consumed += 4 + len(frame)
			buffer = frame
		}
	})
}

func FuzzRequestHeader(f *testing.F) {
	for _, req := range headerCases() {
		f.Add(frameRequest(kmsg.NewRequestFormatter(kmsg.FormatterClientID("client")), req, 7)[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		header, body, err := ParseRequestHeader(frame)
		if err != nil {
			return
		}
		// Re-encoding the parsed header and body reproduces the frame up to
		// the tagged fields, which wire drops: compare only without tags.
		rebuilt := append(AppendRequestHeader(nil, header), body...)
		if header.HeaderVersion < 2 && !bytes.Equal(rebuilt, frame) {
			t.Fatalf("header v%d does not round-trip", header.HeaderVersion)
		}
		if len(body) > len(frame) {
			t.Fatalf("body longer than frame")
		}
		for _, version := range []int16{0, 1, 2} {
			_, _, _ = ParseRequestHeaderVersion(frame, version)
			_, _, _ = ParseResponseHeader(frame, min(version, 1))
		}
	})
}

func FuzzBatchView(f *testing.F) {
	f.Add(sampleBatch())
	f.Add(BuildControlBatch(1, 2, true, 3, 4))
	for _, codec := range allCodecs {
		batch, err := BuildBatch(BatchOptions{Compression: codec}, builderRecords(1000))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(batch)
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		err := ForEachBatch(input, func(view BatchView) error {
			_ = view.LastSequence()
			_ = view.ValidateProduced()
			if view.Validate() != nil {
				// Iterate anyway: a fetched batch is iterated without
				// validation by some readers, so this must not panic either.
				_ = iterateAll(view)
				return nil
			}
			if err := iterateAll(view); err == nil && view.Control() {
				checkControl(view)
			}
			return nil
		})
		_ = err
	})
}

// iterateAll reads every record and header of a batch, decompressing with a
// 1 MiB bound so that fuzzed bombs stay cheap.
func iterateAll(view BatchView) error {
	decompressor := Decompressor{MaxSize: 1 << 20}
	it, err := decompressor.Records(view)
	if err != nil {
		return err
	}
	for it.Next() {
		record := it.Record()
		headers := record.Headers()
		for headers.Next() {
			headers.Header()
		}
	}
	return it.Err()
}

func checkControl(view BatchView) {
	it, err := view.RecordIterator()
	if err != nil {
		return
	}
	for it.Next() {
		_, _ = ParseControlRecord(it.Record().Key, it.Record().Value)
	}
}

func FuzzProduceRequest(f *testing.F) {
	for _, version := range []int16{3, 7, 9, 11, 12, 13} {
		f.Add(sampleProduceRequest(version, kmsg.StringPtr("txn")).AppendTo(nil), version)
	}
	f.Fuzz(func(t *testing.T, body []byte, version int16) {
		p, topics, err := walkProduce(body, version)
		if err != nil || version < ProduceMinVersion || version > ProduceMaxVersion {
			return
		}
		// Whatever the view accepts, kmsg accepts and decodes identically.
		oracle := kmsg.NewPtrProduceRequest()
		oracle.Version = version
		if kerr := oracle.ReadFrom(body); kerr != nil {
			t.Fatalf("wire accepted what kmsg rejects (%v)", kerr)
		}
		compareProduce(t, oracle, p, topics)
	})
}
