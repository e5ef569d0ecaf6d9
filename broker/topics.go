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

// topic is one topic. name and id never change; config is swapped whole;
// partitions is guarded by Broker.topicsMu and only ever replaced by a
// longer slice (CreatePartitions).
type topic struct {
	name       string
	id         [16]byte
	config     atomic.Pointer[topicConfig]
	partitions []*partition
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
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		id := newRandomID()
		b.clusterID = base64.RawURLEncoding.EncodeToString(id[:])
		b.internalTopics = b.newInternalTopics()
		return b.persistTopicsLocked()
	}
	if err != nil {
		return fmt.Errorf("broker: read topic metadata: %w", err)
	}
	var file topicsFileFormat
	if err := json.Unmarshal(data, &file); err != nil {
		return fmt.Errorf("broker: parse %s: %w", path, err)
	}
	b.clusterID = file.ClusterID
	b.internalTopics = b.newInternalTopics()
	for _, entry := range file.Topics {
		if isInternalTopicName(entry.Name) {
			return fmt.Errorf("broker: %s: topic %q has the name of an internal topic (an older version let clients create it); remove it from the file to start", path, entry.Name)
		}
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

// persistTopicsLocked writes topics.json atomically. The caller holds
// topicsMu for writing (or is Start, before any other goroutine).
func (b *Broker) persistTopicsLocked() error {
	file := topicsFileFormat{ClusterID: b.clusterID, Topics: []topicFileFormat{}}
	for _, t := range b.topics {
		file.Topics = append(file.Topics, topicFileFormat{
			Name:       t.name,
			ID:         hex.EncodeToString(t.id[:]),
			Partitions: int32(len(t.partitions)),
			Configs:    t.config.Load().overrides,
		})
	}
	slices.SortFunc(file.Topics, func(x, y topicFileFormat) int { return compareStrings(x.Name, y.Name) })
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return fmt.Errorf("encode topic metadata: %w", err)
	}
	return writeFileAtomic(filepath.Join(b.dataDir, topicsFile), data)
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

// writeFileAtomic replaces path with data so that a crash leaves either the
// old or the new content.
func writeFileAtomic(path string, data []byte) error {
	temporary := path + ".tmp"
	f, err := os.OpenFile(temporary, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", temporary, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", temporary, err)
	}
	if err := os.Rename(temporary, path); err != nil {
		return fmt.Errorf("rename %s: %w", temporary, err)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("sync directory of %s: %w", path, err)
	}
	defer dir.Close()
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("sync directory of %s: %w", path, err)
	}
	return nil
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
func (b *Broker) partitionsOf(t *topic) []*partition {
	b.topicsMu.RLock()
	defer b.topicsMu.RUnlock()
	return t.partitions
}

// partitionOf returns partition index of t, or errUnknownTopic.
func (b *Broker) partitionOf(t *topic, index int32) (*partition, error) {
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

func (b *Broker) allPartitions() []*partition {
	var out []*partition
	for _, t := range b.sortedTopics() {
		out = append(out, b.partitionsOf(t)...)
	}
	return out
}

// autoCreateTopic returns the named topic, creating it with the broker's
// defaults when it does not exist and auto.create.topics.enable is true.
// allowed is the request's own permission (Metadata v4+).
func (b *Broker) autoCreateTopic(name string, allowed bool) (*topic, error) {
	if t := b.topicByName(name); t != nil {
		return t, nil
	}
	if !allowed || !b.config.settings.AutoCreateTopics {
		return nil, fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	t, err := b.createTopic(name, b.config.settings.NumPartitions, nil, false)
	if errors.Is(err, errTopicExists) {
		if t := b.topicByName(name); t != nil {
			return t, nil
		}
	}
	return t, err
}

// createTopic validates and (unless validateOnly) creates a topic with
// the given partition count and config overrides.
func (b *Broker) createTopic(name string, partitions int32, overrides map[string]string, validateOnly bool) (*topic, error) {
	if err := validateTopicName(name); err != nil {
		return nil, err
	}
	if isInternalTopicName(name) {
		return nil, fmt.Errorf("%w: %s is an internal topic", errTopicExists, name)
	}
	if partitions < 1 {
		return nil, fmt.Errorf("%w: %d (must be at least 1)", errInvalidPartitions, partitions)
	}
	if err := validateTopicConfigs(overrides); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidConfig, err)
	}
	t := &topic{name: name, id: newRandomID()}
	t.config.Store(b.config.newTopicConfig(overrides))
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	if _, exists := b.topics[name]; exists {
		return nil, fmt.Errorf("%w: %s", errTopicExists, name)
	}
	if validateOnly {
		return t, nil
	}
	for index := range partitions {
		p, err := b.openPartition(t, index, true)
		if err != nil {
			for _, opened := range t.partitions {
				opened.delete()
			}
			return nil, err
		}
		t.partitions = append(t.partitions, p)
	}
	b.topics[name] = t
	b.topicIDs[t.id] = t
	if err := b.persistTopicsLocked(); err != nil {
		delete(b.topics, name)
		delete(b.topicIDs, t.id)
		for _, opened := range t.partitions {
			opened.delete()
		}
		return nil, fmt.Errorf("create topic %s: %w", name, err)
	}
	b.logger.Info("topic created", "topic", name, "partitions", partitions, "configs", overrides)
	return t, nil
}

// deleteTopic removes a topic from the metadata, then closes and deletes
// its partition logs.
func (b *Broker) deleteTopic(t *topic) error {
	b.topicsMu.Lock()
	if b.topics[t.name] != t {
		b.topicsMu.Unlock()
		return fmt.Errorf("%w: %s", errUnknownTopic, t.name)
	}
	delete(b.topics, t.name)
	delete(b.topicIDs, t.id)
	err := b.persistTopicsLocked()
	parts := t.partitions
	b.topicsMu.Unlock()
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", t.name, err)
	}
	for _, p := range parts {
		if err := p.delete(); err != nil {
			b.logger.Error("delete partition log", "partition", p.name(), "error", err)
		}
	}
	b.logger.Info("topic deleted", "topic", t.name)
	return nil
}

// addPartitions grows t to count partitions.
func (b *Broker) addPartitions(t *topic, count int32, validateOnly bool) error {
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	if b.topics[t.name] != t {
		return fmt.Errorf("%w: %s", errUnknownTopic, t.name)
	}
	current := int32(len(t.partitions))
	if count <= current {
		return fmt.Errorf("%w: topic %s has %d partitions; the new count %d must be larger", errInvalidPartitions, t.name, current, count)
	}
	if validateOnly {
		return nil
	}
	grown := slices.Clip(slices.Clone(t.partitions))
	for index := current; index < count; index++ {
		p, err := b.openPartition(t, index, true)
		if err != nil {
			for _, opened := range grown[current:] {
				opened.delete()
			}
			return err
		}
		grown = append(grown, p)
	}
	previous := t.partitions
	t.partitions = grown
	if err := b.persistTopicsLocked(); err != nil {
		t.partitions = previous
		for _, opened := range grown[current:] {
			opened.delete()
		}
		return fmt.Errorf("create partitions of %s: %w", t.name, err)
	}
	return nil
}

// setTopicConfigs replaces t's overrides (validated by the caller) and
// applies them to its partition logs.
func (b *Broker) setTopicConfigs(t *topic, overrides map[string]string) error {
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	if b.topics[t.name] != t {
		return fmt.Errorf("%w: %s", errUnknownTopic, t.name)
	}
	previous := t.config.Load()
	next := b.config.newTopicConfig(overrides)
	t.config.Store(next)
	if err := b.persistTopicsLocked(); err != nil {
		t.config.Store(previous)
		return fmt.Errorf("alter configs of %s: %w", t.name, err)
	}
	options, err := b.config.storageOptions(next)
	if err != nil {
		return err
	}
	for _, p := range t.partitions {
		if err := p.reconfigure(options); err != nil {
			return fmt.Errorf("alter configs of %s: %w", p.name(), err)
		}
	}
	b.logger.Info("topic configs altered", "topic", t.name, "configs", overrides)
	return nil
}

// closeLogs flushes and closes every partition log.
func (b *Broker) closeLogs() error {
	var errs []error
	for _, p := range b.allPartitions() {
		if err := p.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func partitionDirName(topicName string, index int32) string {
	return topicName + "-" + strconv.Itoa(int(index))
}
