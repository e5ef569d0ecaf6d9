package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/broker/group"
	"github.com/exactly-eos/exactly/broker/storage"
	"github.com/exactly-eos/exactly/wire"
)

// This file wires the group coordinator (broker/group) into the broker:
// opening and closing it with the broker, the topic-id resolver it needs
// for OffsetCommit/OffsetFetch v10, and groupHandler, the adapter the
// group API handlers (find_coordinator.go, join_group.go, ...) share.
//
// Storage: committed offsets and group metadata live in Kafka's
// __consumer_offsets record format (see broker/group's package doc), in
// <data-dir>/__consumer_offsets/__consumer_offsets-<n>/. The extra
// directory level keeps them apart from user topics: user partitions are
// <data-dir>/<topic>-<n>, and creating a topic removes a stale directory of
// its name, so a user topic called __consumer_offsets must never share
// directories with the coordinator. The internal topic is not in
// topics.json; internal_topics.go describes it to clients (Metadata lists
// it as internal, as Kafka does) and refuses their writes: clients use it
// only through the group APIs. The partition count
// (offsets.topic.num.partitions) is recorded in offsets-topic.json in that
// directory on first start: groups map to partitions by it, so a later
// start with another count is refused rather than silently remapping.
// Unlike Kafka's compacted topic, these logs are never cleaned: retention
// is off for them (replay needs every record) and they grow with commits.
//
// Goroutines: the coordinator runs none of its own; the thin driver
// started here (group.StartTicker) moves its time, firing session and
// rebalance timers, and ends when the coordinator is closed. JoinGroup and SyncGroup park until their rebalance step
// completes, so they run on their own goroutine (goAsync): the connection's
// reader keeps reading, sees a client that goes away (which cancels the
// parked call) and serves the connection's other requests. Every other
// group API runs in the reader goroutine, so one connection's commits and
// fetches of offsets take effect in request order, as in Kafka.

// offsetsDirName is the directory under the data directory holding the
// __consumer_offsets partition logs.
const offsetsDirName = group.OffsetsTopic

// offsetsTopicFile records the partition count the store was created with.
const offsetsTopicFile = "offsets-topic.json"

// offsetsSegmentBytes is Kafka's offsets.topic.segment.bytes default.
const offsetsSegmentBytes = 100 << 20

type offsetsTopicFormat struct {
	Partitions int `json:"partitions"`
}

// openGroups opens the __consumer_offsets store and starts the group
// coordinator (replaying the store). Called by Start before any
// connection is accepted.
func (b *Broker) openGroups() error {
	partitions := int(b.config.int64Value("offsets.topic.num.partitions"))
	dir := filepath.Join(b.dataDir, offsetsDirName)
	if err := checkOffsetsPartitions(dir, partitions); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	options, err := b.config.storageOptions(b.config.newTopicConfig(nil))
	if err != nil {
		return fmt.Errorf("broker: %s storage options: %w", group.OffsetsTopic, err)
	}
	// Replay rebuilds every group from the log's start, so nothing may be
	// deleted by retention (Kafka compacts this topic; we keep it whole).
	options.RetentionAge, options.RetentionBytes = -1, -1
	options.SegmentBytes = offsetsSegmentBytes
	store, err := group.OpenLogStore(dir, options)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	config := group.Config{
		GroupMinSessionTimeout:        b.millisSetting("group.min.session.timeout.ms"),
		GroupMaxSessionTimeout:        b.millisSetting("group.max.session.timeout.ms"),
		GroupInitialRebalanceDelay:    b.millisSetting("group.initial.rebalance.delay.ms"),
		OffsetsRetention:              time.Duration(b.config.int64Value("offsets.retention.minutes")) * time.Minute,
		OffsetsRetentionCheckInterval: b.millisSetting("offsets.retention.check.interval.ms"),
		OffsetsTopicPartitions:        partitions,
		Topics:                        topicResolver{b},
	}
	config.NoInitialRebalanceDelay = config.GroupInitialRebalanceDelay == 0
	coordinator, err := group.NewCoordinator(config, store)
	if err != nil {
		store.Close()
		return fmt.Errorf("broker: %w", err)
	}
	b.groups = coordinator
	group.StartTicker(coordinator) // ends when closeGroups closes the coordinator
	return nil
}

func (b *Broker) millisSetting(name string) time.Duration {
	return time.Duration(b.config.int64Value(name)) * time.Millisecond
}

// checkOffsetsPartitions compares the configured partition count with the
// one recorded in dir, recording it when dir is new.
func checkOffsetsPartitions(dir string, partitions int) error {
	return checkInternalPartitions(dir, offsetsTopicFile, "offsets.topic.num.partitions", group.OffsetsTopic, partitions)
}

// checkInternalPartitions compares an internal topic's configured
// partition count (setting) with the one recorded in dir/file, recording
// it when dir is new: keys map to partitions by this count, so a later
// start with another count is refused rather than silently remapping.
func checkInternalPartitions(dir, file, setting, topicName string, partitions int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	path := filepath.Join(dir, file)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		data, err := json.Marshal(offsetsTopicFormat{Partitions: partitions})
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		return storage.WriteFileAtomic(nil, path, data)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var recorded offsetsTopicFormat
	if err := json.Unmarshal(data, &recorded); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	if recorded.Partitions != partitions {
		return fmt.Errorf("%s is %d but %s was created with %d partitions (keys map to partitions by this count; it cannot change)",
			setting, partitions, topicName, recorded.Partitions)
	}
	return nil
}

// closeGroups stops the coordinator and closes its store. Close calls it
// after every connection has finished, so no handler is still using it.
func (b *Broker) closeGroups() error {
	if b.groups == nil {
		return nil
	}
	if err := b.groups.Close(); err != nil {
		return fmt.Errorf("close group coordinator: %w", err)
	}
	return nil
}

// topicResolver maps topic ids to names and back for the coordinator.
type topicResolver struct{ broker *Broker }

// TopicName returns the name of the topic with this id.
func (r topicResolver) TopicName(id [16]byte) (string, bool) {
	if t := r.broker.topicByID(id); t != nil {
		return t.name, true
	}
	return "", false
}

// TopicID returns the id of the named topic.
func (r topicResolver) TopicID(name string) ([16]byte, bool) {
	if t := r.broker.topicByName(name); t != nil {
		return t.id, true
	}
	return [16]byte{}, false
}

// groupServe serves one decoded group request. ctx carries the client's
// id and host (group.WithClientInfo) and ends when the connection dies or
// the broker closes.
type groupServe[R kmsg.Request] func(ctx context.Context, c *connection, req R) kmsg.Response

// handling says where a group handler runs.
type handling bool

const (
	// inReader runs the handler in the connection's reader goroutine.
	inReader handling = false
	// parks runs the handler on its own goroutine: it blocks until a
	// rebalance step completes.
	parks handling = true
)

// groupHandler adapts a group API handler: it decodes the body with kmsg
// (a body that does not decode closes the connection), builds the request
// context and runs serve in the reader goroutine or, for handlers that
// park, on its own goroutine; the response is encoded at the request's
// version. The frame buffer is released only after the response is
// encoded, because decoded byte fields alias it.
func groupHandler[R kmsg.Request](where handling, serve groupServe[R]) handlerFunc {
	return func(c *connection, r *request) {
		req, ok := decodeGroupRequest[R](c, r)
		if !ok {
			return
		}
		info := group.ClientInfo{ClientID: string(r.header.ClientID), Host: clientHost(c.netConn.RemoteAddr())}
		run := func() {
			ctx, cancel := context.WithCancel(group.WithClientInfo(c.ctx, info))
			defer cancel()
			stop := context.AfterFunc(c.broker.ctx, cancel)
			defer stop()
			resp := serve(ctx, c, req)
			resp.SetVersion(r.header.APIVersion)
			c.respond(r, resp.AppendTo)
			// Only now: kmsg's ReadFrom copies strings but leaves byte
			// fields (protocol metadata, assignments) aliasing the frame.
			r.release()
		}
		if where == parks {
			c.goAsync(r, run)
			return
		}
		run()
	}
}

// decodeGroupRequest decodes r's body as an R; on failure it closes the
// connection (completing the slot) and reports false.
func decodeGroupRequest[R kmsg.Request](c *connection, r *request) (R, bool) {
	var zero R
	typed, ok := kmsg.RequestForKey(r.header.APIKey).(R)
	if !ok {
		c.closeWith(r, fmt.Errorf("no kmsg request type for API key %d", r.header.APIKey))
		return zero, false
	}
	typed.SetVersion(r.header.APIVersion)
	if err := typed.ReadFrom(r.body); err != nil {
		c.closeWith(r, fmt.Errorf("decode %s v%d: %w", wire.APIName(r.header.APIKey), r.header.APIVersion, err))
		return zero, false
	}
	return typed, true
}

// clientHost formats a peer address as Kafka reports client hosts
// ("/127.0.0.1").
func clientHost(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return "/" + tcp.IP.String()
	}
	return "/" + addr.String()
}

// shuttingDown reports whether the broker is closing; parked JoinGroup and
// SyncGroup calls then answer NOT_COORDINATOR so clients look for the
// coordinator again instead of rejoining here.
func (b *Broker) shuttingDown() bool { return b.ctx.Err() != nil }

// duringShutdown turns a REBALANCE_IN_PROGRESS answer into NOT_COORDINATOR
// while the broker shuts down (see shuttingDown).
func (b *Broker) duringShutdown(err error) error {
	if errors.Is(err, group.ErrRebalanceInProgress) && b.shuttingDown() {
		return fmt.Errorf("broker shutting down: %w", group.ErrNotCoordinator)
	}
	return err
}

// awaitGroupReply calls start with a reply callback for the group
// coordinator (JoinReply, SyncReply) and waits for the reply or for ctx to
// end; answered is false when ctx ended first. The broker owns the
// channel: it is buffered for the one reply, so the coordinator, which
// replies under a group's lock, never blocks on it, even once nobody
// waits any more.
func awaitGroupReply[T any](ctx context.Context, start func(reply func(T, error))) (result T, answered bool, err error) {
	type answer struct {
		result T
		err    error
	}
	answers := make(chan answer, 1)
	start(func(result T, err error) { answers <- answer{result, err} })
	select {
	case got := <-answers: // answered without parking
		return got.result, true, got.err
	default:
	}
	select {
	case got := <-answers:
		return got.result, true, got.err
	case <-ctx.Done():
		return result, false, nil
	}
}

// abandonedWait is the answer to a parked JoinGroup or SyncGroup whose
// context ended (the client went away or the broker is closing): the
// client must rejoin.
func abandonedWait(ctx context.Context) error {
	return fmt.Errorf("stopped waiting (%v): %w", context.Cause(ctx), group.ErrRebalanceInProgress)
}
