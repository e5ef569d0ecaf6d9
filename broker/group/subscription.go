package group

import (
	"encoding/binary"
	"errors"
)

// consumerProtocolType is the protocol type of Kafka consumers; only its
// member metadata is parsed (for OffsetDelete's subscription check).
const consumerProtocolType = "consumer"

var errBadSubscription = errors.New("malformed consumer protocol subscription")

// subscriptionTopics parses the topics of a consumer protocol
// subscription (ConsumerProtocolSubscription, versions 0–3; all integers
// big-endian):
//
//	int16  version
//	int32  topic count, then per topic: string (int16 length + bytes)
//	bytes  user data (int32 length, -1 null)
//	v1+:   int32 owned topic count, then per topic: string, int32
//	       partition count, int32 per partition
//	v2+:   int32 generation
//	v3+:   nullable string rack
//
// Like Kafka's (and kmsg's) parser it reads every field of the version and
// fails on a short buffer, so metadata that does not parse completely
// subscribes to nothing; trailing bytes are ignored.
func subscriptionTopics(metadata []byte) ([]string, error) {
	r := subscriptionReader{src: metadata}
	version := r.int16()
	count := r.arrayLen()
	var topics []string
	for range max(count, 0) {
		topics = append(topics, r.string())
	}
	r.nullableBytes()
	if version >= 1 {
		owned := r.arrayLen()
		for range max(owned, 0) {
			r.string()
			partitions := r.arrayLen()
			r.skip(4 * int(max(partitions, 0)))
		}
	}
	if version >= 2 {
		r.skip(4)
	}
	if version >= 3 {
		if length := r.int16(); length >= 0 {
			r.skip(int(length))
		}
	}
	if r.bad {
		return nil, errBadSubscription
	}
	return topics, nil
}

// subscriptionReader reads big-endian fields; a short read sets bad.
type subscriptionReader struct {
	src []byte
	bad bool
}

func (r *subscriptionReader) take(n int) []byte {
	if r.bad || n < 0 || len(r.src) < n {
		r.bad = true
		return nil
	}
	out := r.src[:n]
	r.src = r.src[n:]
	return out
}

func (r *subscriptionReader) skip(n int) { r.take(n) }

func (r *subscriptionReader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *subscriptionReader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

// arrayLen reads an array length; each element takes at least a byte, so
// a length beyond the remaining bytes is malformed.
func (r *subscriptionReader) arrayLen() int32 {
	n := r.int32()
	if int(n) > len(r.src) {
		r.bad = true
		return 0
	}
	return n
}

func (r *subscriptionReader) string() string {
	return string(r.take(int(r.int16())))
}

func (r *subscriptionReader) nullableBytes() {
	if n := r.int32(); n >= 0 {
		r.take(int(n))
	}
}
