package verify

import "math/bits"

// bitmap is a growable set of non-negative integers, one bit each.
// It is not safe for concurrent use; its owner says who guards it.
type bitmap struct {
	words []uint64
}

// set adds i to the bitmap and reports whether it was already there.
func (b *bitmap) set(i uint64) (already bool) {
	word := i / 64
	if word >= uint64(len(b.words)) {
		grown := make([]uint64, max(word+1, uint64(2*len(b.words))))
		copy(grown, b.words)
		b.words = grown
	}
	mask := uint64(1) << (i % 64)
	already = b.words[word]&mask != 0
	b.words[word] |= mask
	return already
}

// has reports whether i is in the bitmap.
func (b *bitmap) has(i uint64) bool {
	word := i / 64
	return word < uint64(len(b.words)) && b.words[word]&(uint64(1)<<(i%64)) != 0
}

// setRange adds every integer in [from, to).
func (b *bitmap) setRange(from, to uint64) {
	for i := from; i < to; i++ {
		b.set(i)
	}
}

// count returns how many integers are in the bitmap.
func (b *bitmap) count() uint64 {
	var n int
	for _, w := range b.words {
		n += bits.OnesCount64(w)
	}
	return uint64(n)
}
