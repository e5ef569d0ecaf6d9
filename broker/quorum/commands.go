package quorum

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Command encoding. Every raft log entry the quorum writes is one JSON
// object, the envelope
//
//	{"v":1,"type":"<command type>","body":{...}}
//
// v is the format version (1 is the only one; a decoder rejects any other,
// so a later version can change a body's meaning without being misread).
// type names the command; body holds its fields, named as in the structs
// below. JSON keeps the log readable with a bolt viewer and the decoder
// small; metadata commands are rare, so compactness does not matter.
const commandVersion = 1

// Command type names, as written in the envelope's "type".
const (
	typeRegisterBroker   = "register_broker"
	typeFenceBroker      = "fence_broker"
	typeUnfenceBroker    = "unfence_broker"
	typeCreateTopic      = "create_topic"
	typeDeleteTopic      = "delete_topic"
	typeCreatePartitions = "create_partitions"
	typeAlterPartition   = "alter_partition"
	typeSetTopicConfigs  = "set_topic_configs"
	typeSetGroupConfigs  = "set_group_configs"
	typeAlterReassign    = "alter_reassignment"
	typeElectLeader      = "elect_leader"
)

// maxCommandSize bounds what the decoder accepts (a command is a few
// hundred bytes; a topic's configs a few KiB).
const maxCommandSize = 1 << 20

type envelope struct {
	Version int             `json:"v"`
	Type    string          `json:"type"`
	Body    json.RawMessage `json:"body"`
}

// registerBrokerCmd registers (or re-registers) a broker and unfences it.
// The broker's epoch becomes the entry's log index.
type registerBrokerCmd struct {
	ID        int32      `json:"id"`
	Host      string     `json:"host"`
	Port      int32      `json:"port"`
	Rack      string     `json:"rack,omitempty"`
	Listeners []Endpoint `json:"listeners,omitempty"`
}

// fenceBrokerCmd fences broker ID if its epoch is still Epoch (a broker
// that re-registered meanwhile is not fenced by a stale decision).
type fenceBrokerCmd struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// unfenceBrokerCmd unfences broker ID (epoch Epoch) after a heartbeat.
type unfenceBrokerCmd struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// createTopicCmd creates a topic; the controller picked its ID, the state
// machine assigns the replicas (deterministically, from the image).
type createTopicCmd struct {
	Name              string            `json:"name"`
	ID                [16]byte          `json:"id"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int32             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
}

// deleteTopicCmd deletes a topic.
type deleteTopicCmd struct {
	Name string `json:"name"`
}

// createPartitionsCmd raises a topic's partition count to Count.
type createPartitionsCmd struct {
	Name  string `json:"name"`
	Count int32  `json:"count"`
}

// setTopicConfigsCmd replaces a topic's config overrides (the result of
// an AlterConfigs or IncrementalAlterConfigs, computed and validated by the
// broker that received it).
type setTopicConfigsCmd struct {
	Name    string            `json:"name"`
	Configs map[string]string `json:"configs,omitempty"`
}

// setGroupConfigsCmd replaces a group's dynamic configs (Kafka's GROUP
// config resource, type 16): the result of an AlterConfigs or
// IncrementalAlterConfigs, computed and validated by the broker that
// received it. The group need not exist; no configs removes the entry.
type setGroupConfigsCmd struct {
	Group   string            `json:"group"`
	Configs map[string]string `json:"configs,omitempty"`
}

// alterPartitionCmd is a partition leader's ISR change (Kafka's
// AlterPartition), checked against the current epochs when applied.
type alterPartitionCmd struct {
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	ISR            []int32 `json:"isr"`
}

// encodeCommand returns the log entry for cmd, one of the *Cmd types.
func encodeCommand(cmd any) ([]byte, error) {
	var typ string
	switch cmd.(type) {
	case registerBrokerCmd:
		typ = typeRegisterBroker
	case fenceBrokerCmd:
		typ = typeFenceBroker
	case unfenceBrokerCmd:
		typ = typeUnfenceBroker
	case allocatePIDsCmd:
		typ = typeAllocateProducerIDs
	case createTopicCmd:
		typ = typeCreateTopic
	case deleteTopicCmd:
		typ = typeDeleteTopic
	case createPartitionsCmd:
		typ = typeCreatePartitions
	case alterPartitionCmd:
		typ = typeAlterPartition
	case setTopicConfigsCmd:
		typ = typeSetTopicConfigs
	case setGroupConfigsCmd:
		typ = typeSetGroupConfigs
	case alterReassignmentCmd:
		typ = typeAlterReassign
	case electLeaderCmd:
		typ = typeElectLeader
	default:
		return nil, fmt.Errorf("quorum: encode: unknown command %T", cmd)
	}
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("quorum: encode %s: %w", typ, err)
	}
	return json.Marshal(envelope{Version: commandVersion, Type: typ, Body: body})
}

// decodeCommand parses a log entry into one of the *Cmd types. Any input
// that is not a well-formed envelope of version 1 with a known type and a
// body of that type's shape gives an error wrapping ErrMalformedCommand; it
// never panics (FuzzDecodeCommand).
func decodeCommand(data []byte) (any, error) {
	if len(data) > maxCommandSize {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformedCommand, len(data), maxCommandSize)
	}
	var env envelope
	if err := strictUnmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%w: envelope: %v", ErrMalformedCommand, err)
	}
	if env.Version != commandVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrMalformedCommand, env.Version, commandVersion)
	}
	var cmd any
	var err error
	switch env.Type {
	case typeRegisterBroker:
		cmd, err = decodeBody[registerBrokerCmd](env.Body)
	case typeFenceBroker:
		cmd, err = decodeBody[fenceBrokerCmd](env.Body)
	case typeUnfenceBroker:
		cmd, err = decodeBody[unfenceBrokerCmd](env.Body)
	case typeAllocateProducerIDs:
		cmd, err = decodeBody[allocatePIDsCmd](env.Body)
	case typeCreateTopic:
		cmd, err = decodeBody[createTopicCmd](env.Body)
	case typeDeleteTopic:
		cmd, err = decodeBody[deleteTopicCmd](env.Body)
	case typeCreatePartitions:
		cmd, err = decodeBody[createPartitionsCmd](env.Body)
	case typeAlterPartition:
		cmd, err = decodeBody[alterPartitionCmd](env.Body)
	case typeSetTopicConfigs:
		cmd, err = decodeBody[setTopicConfigsCmd](env.Body)
	case typeSetGroupConfigs:
		cmd, err = decodeBody[setGroupConfigsCmd](env.Body)
	case typeAlterReassign:
		cmd, err = decodeBody[alterReassignmentCmd](env.Body)
	case typeElectLeader:
		cmd, err = decodeBody[electLeaderCmd](env.Body)
	default:
		return nil, fmt.Errorf("%w: unknown type %q", ErrMalformedCommand, env.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s body: %v", ErrMalformedCommand, env.Type, err)
	}
	return cmd, nil
}

func decodeBody[T any](body json.RawMessage) (T, error) {
	var v T
	if len(body) == 0 {
		return v, fmt.Errorf("missing body")
	}
	err := strictUnmarshal(body, &v)
	return v, err
}

// strictUnmarshal decodes exactly one JSON value with no unknown fields.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}
