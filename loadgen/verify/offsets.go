package verify

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Observer names one reader of a topic within its OffsetObservations: a
// read-back, a group of consume workers, the live consumers, a table. A
// topic has at most MaxObservers.
type Observer uint8

// MaxObservers bounds the readers of one topic (one bit each per offset).
const MaxObservers = 8

// OffsetObservations holds, for one topic, what every reader found at each
// offset, and finds inconsistent offsets: offsets at which two reads (by
// two readers, or one reader twice) returned different records. Kafka
// gives an offset one record for good: two answers mean the log was
// rewritten under its readers (a truncation that reused offsets, or a
// fetch served from the wrong place).
//
// Which reader read first does not matter: an offset is inconsistent for
// every reader that read it once any two reads disagree, so each reader's
// count (Inconsistent) is the same whatever order they read in.
//
// Memory is 9 bytes per offset read (a record id and a bit per reader),
// plus a map entry per inconsistent offset. Consumers' poll trackers feed
// it from their goroutines while the run goes on and read-backs after it:
// mu guards every field.
type OffsetObservations struct {
	mu        sync.Mutex
	topic     string
	observers []string
	// partitions holds the first record read at each offset and which
	// observers read it (any record).
	partitions map[int32]*observedPartition
	// conflicts holds, for each inconsistent offset, every record read
	// there with the observers that read it.
	conflicts map[offsetKey]map[RecordID]uint8
	// distinct counts, per observer, the offsets it read at least once.
	distinct [MaxObservers]uint64
}

type offsetKey struct {
	partition int32
	offset    int64
}

// observedPartition is one partition's offsets: dense slices from offset 0
// while offsets stay near what was read, a map beyond (a stray huge offset
// must not allocate gigabytes).
type observedPartition struct {
	ids    []RecordID // first record read at each offset; 0: none
	seen   []uint8    // observers that read each offset
	sparse map[int64]observedOffset
}

type observedOffset struct {
	id   RecordID
	seen uint8
}

// denseSlack is how far beyond the dense slices an offset may land and
// still grow them.
const denseSlack = 1 << 16

// NewOffsetObservations returns an empty record of topic's offsets.
func NewOffsetObservations(topic string) *OffsetObservations {
	return &OffsetObservations{topic: topic, partitions: make(map[int32]*observedPartition),
		conflicts: make(map[offsetKey]map[RecordID]uint8)}
}

// Topic returns the topic observed.
func (o *OffsetObservations) Topic() string { return o.topic }

// Observer returns the observer called name, adding it if it is new. It
// panics beyond MaxObservers: the readers of a run are a fixed few.
func (o *OffsetObservations) Observer(name string) Observer {
	o.mu.Lock()
	defer o.mu.Unlock()
	if index := slices.Index(o.observers, name); index >= 0 {
		return Observer(index)
	}
	if len(o.observers) == MaxObservers {
		panic(fmt.Sprintf("verify: more than %d readers of topic %s", MaxObservers, o.topic))
	}
	o.observers = append(o.observers, name)
	return Observer(len(o.observers) - 1)
}

// Observe notes that observer read record id at offset of partition. A
// zero id (a control record) is not noted.
func (o *OffsetObservations) Observe(observer Observer, partition int32, offset int64, id RecordID) {
	if id == 0 || offset < 0 {
		return
	}
	bit := uint8(1) << observer
	o.mu.Lock()
	defer o.mu.Unlock()
	part := o.partitions[partition]
	if part == nil {
		part = &observedPartition{}
		o.partitions[partition] = part
	}
	stored := part.get(offset)
	if stored.seen&bit == 0 {
		o.distinct[observer]++
	}
	switch {
	case stored.id == 0:
		part.set(offset, observedOffset{id: id, seen: bit})
		return
	case stored.id != id:
		key := offsetKey{partition, offset}
		reads := o.conflicts[key]
		if reads == nil {
			// Until now every read of the offset agreed.
			reads = map[RecordID]uint8{stored.id: stored.seen}
			o.conflicts[key] = reads
		}
		reads[id] |= bit
	default:
		if reads := o.conflicts[offsetKey{partition, offset}]; reads != nil {
			reads[id] |= bit
		}
	}
	stored.seen |= bit
	part.set(offset, stored)
}

// Inconsistent returns how many offsets observer read at which two reads
// disagreed.
func (o *OffsetObservations) Inconsistent(observer Observer) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var count uint64
	for _, reads := range o.conflicts {
		if readers(reads)&(1<<observer) != 0 {
			count++
		}
	}
	return count
}

// Distinct returns how many offsets observer read at least once.
func (o *OffsetObservations) Distinct(observer Observer) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.distinct[observer]
}

func readers(reads map[RecordID]uint8) uint8 {
	var union uint8
	for _, seen := range reads {
		union |= seen
	}
	return union
}

// Inconsistency is one inconsistent offset: every record read there, with
// who read it.
type Inconsistency struct {
	Topic     string
	Partition int32
	Offset    int64
	Reads     []OffsetRead
}

// OffsetRead is one record read at an offset: at an inconsistent offset
// with its readers, or one a reader should not have read (Unreturned)
// with its partition and offset.
type OffsetRead struct {
	Partition int32
	Offset    int64
	Record    RecordID
	Readers   []string
}

// String renders "topic t partition 2 offset 45: producer 0 seq 7 (read by
// read_committed, polls) vs producer 1 seq 3 (read by table)".
func (i Inconsistency) String() string {
	parts := make([]string, len(i.Reads))
	for index, read := range i.Reads {
		parts[index] = fmt.Sprintf("%s (read by %s)", read.Record, strings.Join(read.Readers, ", "))
	}
	return fmt.Sprintf("topic %s partition %d offset %d: %s", i.Topic, i.Partition, i.Offset, strings.Join(parts, " vs "))
}

// Inconsistencies returns up to limit inconsistent offsets observer read,
// lowest partition and offset first.
func (o *OffsetObservations) Inconsistencies(observer Observer, limit int) []Inconsistency {
	o.mu.Lock()
	defer o.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(o.conflicts), func(a, b offsetKey) int {
		return cmp.Or(cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset))
	})
	var found []Inconsistency
	for _, key := range keys {
		reads := o.conflicts[key]
		if readers(reads)&(1<<observer) == 0 {
			continue
		}
		if len(found) == limit {
			break
		}
		inconsistency := Inconsistency{Topic: o.topic, Partition: key.partition, Offset: key.offset}
		for _, id := range slices.Sorted(maps.Keys(reads)) {
			read := OffsetRead{Record: id}
			for index, name := range o.observers {
				if reads[id]&(1<<index) != 0 {
					read.Readers = append(read.Readers, name)
				}
			}
			inconsistency.Reads = append(inconsistency.Reads, read)
		}
		found = append(found, inconsistency)
	}
	return found
}

// Reference returns the offsets observer read, below ends (per partition,
// the end of observer's read), as the offsets a consumer with the same
// isolation level must not jump over (see PollTracker). Offsets at or
// above a partition's end, and partitions without one, are not judged.
func (o *OffsetObservations) Reference(observer Observer, ends map[int32]int64) SkipReference {
	return observedReference{observations: o, bit: 1 << observer, ends: ends}
}

type observedReference struct {
	observations *OffsetObservations
	bit          uint8
	ends         map[int32]int64
}

func (r observedReference) Skipped(partition int32, from, to int64) (count uint64, first int64, firstID RecordID) {
	end, ok := r.ends[partition]
	if !ok {
		return 0, 0, 0
	}
	low, high := from+1, min(to, end)
	o := r.observations
	o.mu.Lock()
	defer o.mu.Unlock()
	part := o.partitions[partition]
	if part == nil || low >= high {
		return 0, 0, 0
	}
	note := func(offset int64, stored observedOffset) {
		if stored.seen&r.bit == 0 {
			return
		}
		if count == 0 || offset < first {
			first, firstID = offset, stored.id
		}
		count++
	}
	for offset := max(low, 0); offset < min(high, int64(len(part.ids))); offset++ {
		note(offset, observedOffset{id: part.ids[offset], seen: part.seen[offset]})
	}
	for offset, stored := range part.sparse {
		if offset >= low && offset < high {
			note(offset, stored)
		}
	}
	return count, first, firstID
}

// Unreturned counts the offsets below ends (per partition) at which
// observer read a record and reference read none, and names up to limit
// of them, lowest partition and offset first. With observer a group of
// read_committed consumers and reference the read_committed read-back,
// those are records the consumers must never have seen: records of
// aborted (or never committed) transactions; the read-back returns every
// committed record below its ends.
func (o *OffsetObservations) Unreturned(observer, reference Observer, ends map[int32]int64, limit int) (uint64, []OffsetRead) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var count uint64
	var found []offsetKey
	note := func(partition int32, offset int64, seen uint8) {
		if seen&(1<<observer) == 0 || seen&(1<<reference) != 0 || offset >= ends[partition] {
			return
		}
		count++
		found = append(found, offsetKey{partition, offset})
	}
	for partition, part := range o.partitions {
		for offset := range min(int64(len(part.ids)), ends[partition]) {
			note(partition, offset, part.seen[offset])
		}
		for offset, stored := range part.sparse {
			note(partition, offset, stored.seen)
		}
	}
	slices.SortFunc(found, func(a, b offsetKey) int {
		return cmp.Or(cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset))
	})
	examples := make([]OffsetRead, 0, min(limit, len(found)))
	for _, key := range found[:min(limit, len(found))] {
		examples = append(examples, OffsetRead{Partition: key.partition, Offset: key.offset,
			Record: o.partitions[key.partition].get(key.offset).id})
	}
	return count, examples
}

func (p *observedPartition) get(offset int64) observedOffset {
	if offset < int64(len(p.ids)) {
		return observedOffset{id: p.ids[offset], seen: p.seen[offset]}
	}
	return p.sparse[offset]
}

func (p *observedPartition) set(offset int64, value observedOffset) {
	if offset >= int64(len(p.ids)) && offset < int64(len(p.ids))+denseSlack {
		size := max(offset+1, int64(2*len(p.ids)))
		p.ids = append(p.ids, make([]RecordID, size-int64(len(p.ids)))...)
		p.seen = append(p.seen, make([]uint8, size-int64(len(p.seen)))...)
		// Offsets the dense slices now cover leave the map.
		for sparseOffset, stored := range p.sparse {
			if sparseOffset < size {
				p.ids[sparseOffset], p.seen[sparseOffset] = stored.id, stored.seen
				delete(p.sparse, sparseOffset)
			}
		}
	}
	if offset < int64(len(p.ids)) {
		p.ids[offset], p.seen[offset] = value.id, value.seen
		return
	}
	if p.sparse == nil {
		p.sparse = make(map[int64]observedOffset)
	}
	p.sparse[offset] = value
}
