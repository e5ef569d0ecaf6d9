package group

import (
	"math"
	"unicode/utf16"
)

// PartitionFor returns the __consumer_offsets partition that owns groupID,
// as Kafka computes it: Utils.abs(groupID.hashCode()) % numPartitions, where
// hashCode is Java's String.hashCode over UTF-16 code units and Utils.abs
// maps math.MinInt32 to 0 and is Math.abs otherwise. numPartitions below 1
// yields 0.
func PartitionFor(groupID string, numPartitions int) int {
	if numPartitions < 1 {
		return 0
	}
	return int(kafkaAbs(javaStringHashCode(groupID)) % int32(numPartitions))
}

// javaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1]
// with int32 overflow, over the string's UTF-16 code units (characters
// outside the BMP count as two surrogates). Invalid UTF-8 bytes decode as
// U+FFFD, as Java's UTF-8 decoder does for a malformed byte.
func javaStringHashCode(value string) int32 {
	var hash int32
	for _, r := range value {
		if r >= 0x10000 {
			high, low := utf16.EncodeRune(r)
			hash = 31*hash + high
			hash = 31*hash + low
			continue
		}
		hash = 31*hash + r
	}
	return hash
}

// kafkaAbs is Kafka's Utils.abs: Math.abs, except that math.MinInt32 (whose
// absolute value does not fit) becomes 0. It is not Utils.toPositive
// (n & 0x7fffffff), which the producer's partitioner uses.
func kafkaAbs(value int32) int32 {
	switch {
	case value == math.MinInt32:
		return 0
	case value < 0:
		return -value
	}
	return value
}
