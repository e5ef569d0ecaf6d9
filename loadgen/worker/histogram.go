package worker

import (
	"encoding/binary"
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// A summary's histograms are sparse: the geometry (lowest and highest
// trackable value, significant figures) and, for each bucket with a
// count, the gap from the previous one and the count, as unsigned
// varints. A second's histogram fills a few hundred of its some 20,000
// buckets, so this costs a few microseconds and a few hundred bytes,
// where the standard compressed encoding's deflate state costs about a
// millisecond a histogram, a fixed cost a lightly loaded worker felt.

// EncodeHistogram encodes h sparsely.
func EncodeHistogram(h *hdrhistogram.Histogram) []byte {
	snapshot := h.Export()
	out := binary.AppendUvarint(nil, uint64(snapshot.LowestTrackableValue))
	out = binary.AppendUvarint(out, uint64(snapshot.HighestTrackableValue))
	out = binary.AppendUvarint(out, uint64(snapshot.SignificantFigures))
	last := -1
	for index, count := range snapshot.Counts {
		if count <= 0 {
			continue
		}
		out = binary.AppendUvarint(out, uint64(index-last))
		out = binary.AppendUvarint(out, uint64(count))
		last = index
	}
	return out
}

// DecodeHistogram decodes a histogram EncodeHistogram encoded into one of
// like's geometry; another geometry, a bucket out of its range or a
// truncated encoding is an error.
func DecodeHistogram(encoded []byte, like *hdrhistogram.Histogram) (*hdrhistogram.Histogram, error) {
	r := &batchReader{data: encoded}
	snapshot := like.Export()
	lowest, highest, figures := r.uvarint(), r.uvarint(), r.uvarint()
	if r.err != nil {
		return nil, fmt.Errorf("histogram: %w", r.err)
	}
	if int64(lowest) != snapshot.LowestTrackableValue || int64(highest) != snapshot.HighestTrackableValue || int64(figures) != snapshot.SignificantFigures {
		return nil, fmt.Errorf("histogram of geometry %d..%d, %d figures; want %d..%d, %d figures", lowest, highest, figures,
			snapshot.LowestTrackableValue, snapshot.HighestTrackableValue, snapshot.SignificantFigures)
	}
	clear(snapshot.Counts)
	index := -1
	for len(r.data) > 0 {
		gap, count := r.uvarint(), r.uvarint()
		if r.err != nil {
			return nil, fmt.Errorf("histogram: %w", r.err)
		}
		if gap == 0 || gap > uint64(len(snapshot.Counts)) || index+int(gap) >= len(snapshot.Counts) || count > 1<<62 {
			return nil, fmt.Errorf("histogram: bucket %d+%d of %d, count %d", index, gap, len(snapshot.Counts), count)
		}
		index += int(gap)
		snapshot.Counts[index] = int64(count)
	}
	return hdrhistogram.Import(snapshot), nil
}
