package broker

import "testing"

// countingReserver is a local block reserver: blocks in order from 0.
type countingReserver struct{ end int64 }

func (r *countingReserver) ReserveBlock(size int64) (int64, error) {
	start := r.end
	r.end += size
	return start, nil
}

// TestStridedProducerIDsAreDistinct: brokers of a cluster, each reserving
// blocks from its own counter starting at 0, never hand out the same id.
func TestStridedProducerIDsAreDistinct(t *testing.T) {
	t.Parallel()
	owner := map[int64]int64{} // block start -> node
	const size = 1000
	for _, node := range []int64{0, 1, 2, 3, producerIDStride - 1} {
		r := stridedReserver{local: &countingReserver{}, nodeID: node}
		for range 50 {
			start, err := r.ReserveBlock(size)
			if err != nil {
				t.Fatal(err)
			}
			if start%size != 0 {
				t.Fatalf("node %d: block start %d not aligned to the block size", node, start)
			}
			// Blocks are aligned and of one size: distinct starts are
			// disjoint blocks.
			if other, taken := owner[start]; taken {
				t.Fatalf("node %d got block %d of node %d", node, start, other)
			}
			owner[start] = node
		}
	}
}
