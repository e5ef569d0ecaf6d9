package broker

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/exactly-eos/exactly/broker/metrics"
	"github.com/exactly-eos/exactly/broker/storage"
)

// Topic metadata is persisted in <data-dir>/topics.json, rewritten
// atomically (temporary file, fsync, rename, fsync of the directory) on
// every change:
//
//	{"cluster_id": "<22-char base64url>",
//	 "topics": [{"name": "t", "id": "<32 hex digits>", "partitions": 6,
//	             "configs": {"retention.ms": "60000"}}]}
//
// Partition p of topic t lives in <data-dir>/t-p/ as a storage.Log. A
// partition directory whose topic is not in topics.json is left alone; a
// new topic first removes any stale directory of the same name.
const topicsFile = "topics.json"

type topicsFileFormat struct {
	ClusterID string            `json:"cluster_id"`
	Topics    []topicFileFormat `json:"topics"`
}

type topicFileFormat struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Partitions int32             `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// topic is one topic. name and id never change; config is swapped whole
// (under Broker.metadataMu); partitions is guarded by Broker.topicsMu and
// only ever replaced by a longer slice (CreatePartitions, under
// metadataMu too).
type topic struct {
	name       string
	id         [16]byte
	config     atomic.Pointer[topicConfig]
	partitions []*topicPartition
	// metrics is the topic's data metrics, set on first use when the
	// broker has metrics (topicMetrics).
	metrics atomic.Pointer[metrics.Topic]
}

// maxTopicNameLength is Kafka's limit on topic names.
const maxTopicNameLength = 249

// validateTopicName applies Kafka's rules: 1..249 characters from
// [a-zA-Z0-9._-], and not "." or "..".
func validateTopicName(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("%w: %q", errInvalidTopic, name)
	}
	if len(name) > maxTopicNameLength {
		return fmt.Errorf("%w: %d characters, at most %d", errInvalidTopic, len(name), maxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		legal := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !legal {
			return fmt.Errorf("%w: %q contains %q (legal: a-z A-Z 0-9 . _ -)", errInvalidTopic, name, c)
		}
	}
	return nil
}

func newRandomID() [16]byte {
	var id [16]byte
	rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40 // UUID version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// loadTopics reads topics.json (creating the cluster id on first start)
// and opens every partition log. Called by Start before any connection.
func (b *Broker) loadTopics() error {
	path := filepath.Join(b.dataDir, topicsFile)
	data, err := storage.ReadFile(b.fs, path)
	if errors.Is(err, os.ErrNotExist) {
		id := newRandomID()
		b.clusterID = base64.RawURLEncoding.EncodeToString(id[:])
		return b.writeTopicsFile([]topicFileFormat{})
	}
	if err != nil {
		return fmt.Errorf("broker: read topic metadata: %w", err)
	}
	var file topicsFileFormat
	if err := json.Unmarshal(data, &file); err != nil {
		return fmt.Errorf("broker: parse %s: %w", path, err)
	}
	b.clusterID = file.ClusterID
	for _, entry := range file.Topics {
		idBytes, err := hex.DecodeString(entry.ID)
		if err != nil || len(idBytes) != 16 {
			return fmt.Errorf("broker: %s: topic %q has a bad id %q", path, entry.Name, entry.ID)
		}
		if err := validateTopicConfigs(entry.Configs); err != nil {
			return fmt.Errorf("broker: %s: topic %q: %w", path, entry.Name, err)
		}
		t := &topic{name: entry.Name, id: [16]byte(idBytes)}
		t.config.Store(b.config.newTopicConfig(entry.Configs))
		for index := range entry.Partitions {
			p, err := b.openPartition(t, index, false)
			if err != nil {
				return err
			}
			t.partitions = append(t.partitions, p)
		}
		b.topics[t.name] = t
		b.topicIDs[t.id] = t
	}
	return nil
}

// topicEntries describes every published topic as topics.json records
// it, sorted by name (takes topicsMu for reading).
func (b *Broker) topicEntries() []topicFileFormat {
	b.topicsMu.RLock()
	entries := make([]topicFileFormat, 0, len(b.topics)+1)
	for _, t := range b.topics {
		entries = append(entries, t.fileEntry(int32(len(t.partitions))))
	}
	b.topicsMu.RUnlock()
	return entries
}

// fileEntry is t's record in topics.json with the given partition count.
func (t *topic) fileEntry(partitions int32) topicFileFormat {
	return topicFileFormat{Name: t.name, ID: hex.EncodeToString(t.id[:]), Partitions: partitions,
		Configs: t.config.Load().overrides}
}

// writeTopicsFile writes topics.json atomically with the given entries
// (storage.WriteFileAtomic through the broker's FS). The caller holds
// metadataMu (or is Start, before any other goroutine), so files are
// written in the order the changes are published; it does not hold
// topicsMu, so lookups never wait on the disk.
func (b *Broker) writeTopicsFile(entries []topicFileFormat) error {
	file := topicsFileFormat{ClusterID: b.clusterID, Topics: entries}
	slices.SortFunc(file.Topics, func(x, y topicFileFormat) int { return compareStrings(x.Name, y.Name) })
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return fmt.Errorf("encode topic metadata: %w", err)
	}
	return storage.WriteFileAtomic(b.fs, filepath.Join(b.dataDir, topicsFile), data)
}

func compareStrings(x, y string) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// topicByName returns the topic, or nil.
func (b *Broker) topicByName(name string) *topic {
	b.topicsMu.RLock()
	defer b.topicsMu.RUnlock()
	return b.topics[name]
}

// topicByID returns the topic, or nil.
func (b *Broker) topicByID(id [16]byte) *topic {
	b.topicsMu.RLock()
	defer b.topicsMu.RUnlock()
	return b.topicIDs[id]
}

// partitionsOf returns the topic's current partitions.
func (b *Broker) partitionsOf(t *topic) []*topicPartition {
	b.topicsMu.RLock()
	defer b.topicsMu.RUnlock()
	return t.partitions
}

// partitionOf returns partition index of t, or errUnknownTopic.
func (b *Broker) partitionOf(t *topic, index int32) (*topicPartition, error) {
	parts := b.partitionsOf(t)
	if index < 0 || int(index) >= len(parts) {
		return nil, fmt.Errorf("%w: %s-%d", errUnknownTopic, t.name, index)
	}
	return parts[index], nil
}

// sortedTopics returns every topic, sorted by name.
func (b *Broker) sortedTopics() []*topic {
	b.topicsMu.RLock()
	out := make([]*topic, 0, len(b.topics))
	for _, t := range b.topics {
		out = append(out, t)
	}
	b.topicsMu.RUnlock()
	slices.SortFunc(out, func(x, y *topic) int { return compareStrings(x.name, y.name) })
	return out
}

func (b *Broker) allPartitions() []*topicPartition {
	var out []*topicPartition
	for _, t := range b.sortedTopics() {
		out = append(out, b.partitionsOf(t)...)
	}
	return out
}

// pendingTopic is a topic name reserved by a createTopic in progress
// (Broker.pendingTopics): its partitions are being opened and topics.json
// written without topicsMu held. done is closed when the creation is
// published or abandoned; created says which.
type pendingTopic struct {
	done    chan struct{}
	created bool
}

// createTopicWithID validates and (unless validateOnly) creates the local
// replica of a topic the controller created, under the topic's id, with
// the given partition count and config overrides (ensureLocalTopic). The
// name is reserved under topicsMu, the partitions opened and topics.json
// written without it (lookups of other topics never wait on the disk),
// and the topic published under it. A concurrent create of the same name
// waits for the reservation and then answers as if it came after:
// TOPIC_ALREADY_EXISTS if the first succeeded, a fresh attempt if it
// failed.
func (b *Broker) createTopicWithID(name string, id [16]byte, partitions int32, overrides map[string]string, validateOnly bool) (*topic, error) {
	if err := validateTopicName(name); err != nil {
		return nil, err
	}
	// The internal topics are replicated topics, created here only as
	// replicas (ensureLocalTopic); clients cannot create them
	// (Broker.clusterCreateTopic refuses).
	if partitions < 1 {
		return nil, fmt.Errorf("%w: %d (must be at least 1)", errInvalidPartitions, partitions)
	}
	if err := validateTopicConfigs(overrides); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	t := &topic{name: name, id: id}
	t.config.Store(b.config.newTopicConfig(overrides))
	reservation, err := b.reserveTopicName(name, validateOnly)
	if err != nil {
		return nil, err
	}
	if validateOnly {
		return t, nil
	}
	created := false
	defer func() {
		b.topicsMu.Lock()
		if b.pendingTopics[name] == reservation { // a deletion may have reserved it since
			delete(b.pendingTopics, name)
		}
		b.topicsMu.Unlock()
		reservation.created = created
		close(reservation.done)
	}()
	for index := range partitions {
		p, err := b.openPartition(t, index, true)
		if err != nil {
			deletePartitions(t.partitions)
			return nil, err
		}
		t.partitions = append(t.partitions, p)
	}
	b.metadataMu.Lock()
	defer b.metadataMu.Unlock()
	if err := b.writeTopicsFile(append(b.topicEntries(), t.fileEntry(partitions))); err != nil {
		deletePartitions(t.partitions)
		return nil, fmt.Errorf("create topic %s: %w", name, err)
	}
	b.topicsMu.Lock()
	b.topics[name] = t
	b.topicIDs[t.id] = t
	b.topicsMu.Unlock()
	created = true
	b.logger.Info("topic created", "topic", name, "partitions", partitions, "configs", overrides)
	return t, nil
}

// reserveTopicName enters name in pendingTopics, or fails with
// errTopicExists when the topic exists; with validateOnly it only checks.
// It waits for a creation of the same name in progress (bounded by the
// number of concurrent creators: each wait ends one of them).
func (b *Broker) reserveTopicName(name string, validateOnly bool) (*pendingTopic, error) {
	for {
		b.topicsMu.Lock()
		if _, exists := b.topics[name]; exists {
			b.topicsMu.Unlock()
			return nil, fmt.Errorf("%w: %s", errTopicExists, name)
		}
		pending := b.pendingTopics[name]
		if pending == nil {
			if validateOnly {
				b.topicsMu.Unlock()
				return nil, nil
			}
			reservation := &pendingTopic{done: make(chan struct{})}
			b.pendingTopics[name] = reservation
			b.topicsMu.Unlock()
			return reservation, nil
		}
		b.topicsMu.Unlock()
		<-pending.done
		if pending.created {
			return nil, fmt.Errorf("%w: %s", errTopicExists, name)
		}
	}
}

// deletePartitions closes and removes partitions that were never published.
func deletePartitions(partitions []*topicPartition) {
	for _, p := range partitions {
		p.Delete()
	}
}

// deleteTopic removes a topic from topics.json and the lookup maps, then
// closes and deletes its partition logs. Its name stays reserved
// (pendingTopics) until the directories are gone, so a new topic of the
// same name waits instead of opening directories the deletion removes;
// topicsMu is held only while the maps change.
func (b *Broker) deleteTopic(t *topic) error {
	b.metadataMu.Lock()
	defer b.metadataMu.Unlock()
	if b.topicByName(t.name) != t {
		return fmt.Errorf("%w: %s", errUnknownTopic, t.name)
	}
	entries := slices.DeleteFunc(b.topicEntries(), func(entry topicFileFormat) bool { return entry.Name == t.name })
	if err := b.writeTopicsFile(entries); err != nil {
		return fmt.Errorf("delete topic %s: %w", t.name, err)
	}
	reservation := &pendingTopic{done: make(chan struct{})}
	b.topicsMu.Lock()
	delete(b.topics, t.name)
	delete(b.topicIDs, t.id)
	b.pendingTopics[t.name] = reservation
	parts := t.partitions
	b.topicsMu.Unlock()
	for _, p := range parts {
		if err := p.Delete(); err != nil {
			b.logger.Error("delete partition log", "partition", p.Name(), "error", err)
		}
	}
	b.topicsMu.Lock()
	if b.pendingTopics[t.name] == reservation {
		delete(b.pendingTopics, t.name)
	}
	b.topicsMu.Unlock()
	close(reservation.done) // created stays false: a waiting create tries afresh
	b.logger.Info("topic deleted", "topic", t.name)
	return nil
}

// addPartitions grows t to count partitions: the new logs are opened and
// topics.json written under metadataMu only, the longer partition list
// published under topicsMu.
func (b *Broker) addPartitions(t *topic, count int32, validateOnly bool) error {
	b.metadataMu.Lock()
	defer b.metadataMu.Unlock()
	if b.topicByName(t.name) != t {
		return fmt.Errorf("%w: %s", errUnknownTopic, t.name)
	}
	current := int32(len(b.partitionsOf(t)))
	if count <= current {
		return fmt.Errorf("%w: topic %s has %d partitions; the new count %d must be larger", errInvalidPartitions, t.name, current, count)
	}
	if validateOnly {
		return nil
	}
	grown := slices.Clip(slices.Clone(b.partitionsOf(t)))
	for index := current; index < count; index++ {
		p, err := b.openPartition(t, index, true)
		if err != nil {
			deletePartitions(grown[current:])
			return err
		}
		grown = append(grown, p)
	}
	entries := b.topicEntries()
	for i := range entries {
		if entries[i].Name == t.name {
			entries[i].Partitions = count
		}
	}
	if err := b.writeTopicsFile(entries); err != nil {
		deletePartitions(grown[current:])
		return fmt.Errorf("create partitions of %s: %w", t.name, err)
	}
	b.topicsMu.Lock()
	t.partitions = grown
	b.topicsMu.Unlock()
	return nil
}

// setTopicConfigs replaces t's overrides (validated by the caller) and
// applies them to its partition logs (under metadataMu, not topicsMu).
func (b *Broker) setTopicConfigs(t *topic, overrides map[string]string) error {
	b.metadataMu.Lock()
	defer b.metadataMu.Unlock()
	if b.topicByName(t.name) != t {
		return fmt.Errorf("%w: %s", errUnknownTopic, t.name)
	}
	previous := t.config.Load()
	next := b.config.newTopicConfig(overrides)
	t.config.Store(next)
	if err := b.writeTopicsFile(b.topicEntries()); err != nil {
		t.config.Store(previous)
		return fmt.Errorf("alter configs of %s: %w", t.name, err)
	}
	options := b.config.storageOptions(next)
	for _, p := range b.partitionsOf(t) {
		if err := p.Reconfigure(options); err != nil {
			return fmt.Errorf("alter configs of %s: %w", p.Name(), err)
		}
	}
	b.logger.Info("topic configs altered", "topic", t.name, "configs", overrides)
	return nil
}

// closeLogs flushes and closes every partition log.
func (b *Broker) closeLogs() error {
	var errs []error
	for _, p := range b.allPartitions() {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	b.checkpointHighWatermarks() // the final high watermarks
	return errors.Join(errs...)
}

func partitionDirName(topicName string, index int32) string {
	return topicName + "-" + strconv.Itoa(int(index))
}
