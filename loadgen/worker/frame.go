package worker

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Protocol is the version of the runner–worker protocol this binary
// speaks. The runner and every worker must speak the same one: the
// handshake refuses any other, in one line, before any work starts. Bump
// it with any change to the handshake, the frames, the record codec or
// the JSON of Spec, Event or Summary that an older peer would misread.
const Protocol = 2

// The worker's output (its stdout) is a stream of frames: a kind byte, the
// payload's length as an unsigned varint, and the payload. A pipe, an ssh
// channel or `kubectl exec -i` carries it unchanged.
const (
	// frameHello is the worker's first frame: a Hello, JSON.
	frameHello = 'h'
	// frameEvent is one Event, JSON.
	frameEvent = 'e'
	// frameRecords is a batch of record outcomes (RecordStream),
	// compressed with zstd.
	frameRecords = 'r'
	// frameSummary is a Summary of the measurements since the last one,
	// JSON.
	frameSummary = 's'
)

// maxFrame bounds one frame's payload: a record batch is flushed well
// below it (maxBatchBytes), so a bigger length means the stream is not
// ours or is corrupt.
const maxFrame = 64 << 20

// Hello is the worker's first frame: the protocol it speaks and the
// version of its binary, named in the runner's refusal when they differ.
type Hello struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
}

// Handshake is the runner's first line on the worker's stdin: the
// protocol it speaks, the worker's spec, and the SASL password of the
// spec's security settings (on stdin, which no process list shows and
// every transport carries, unlike the environment).
type Handshake struct {
	Protocol int    `json:"protocol"`
	Spec     Spec   `json:"spec"`
	Password string `json:"password,omitempty"`
}

// appendFrame appends a frame of kind with payload to out.
func appendFrame(out []byte, kind byte, payload []byte) []byte {
	out = append(out, kind)
	out = binary.AppendUvarint(out, uint64(len(payload)))
	return append(out, payload...)
}

// errNotFrame is a stream that does not follow the frame format.
var errNotFrame = errors.New("not a worker frame")

// readFrame reads one frame; io.EOF at a frame boundary is the stream's
// clean end.
func readFrame(in *bufio.Reader) (kind byte, payload []byte, err error) {
	kind, err = in.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	switch kind {
	case frameHello, frameEvent, frameRecords, frameSummary:
	default:
		return kind, nil, fmt.Errorf("%w: kind byte %q", errNotFrame, kind)
	}
	length, err := binary.ReadUvarint(in)
	if err != nil {
		return kind, nil, fmt.Errorf("%w: length: %v", errNotFrame, noEOF(err))
	}
	if length > maxFrame {
		return kind, nil, fmt.Errorf("%w: a %q frame of %d bytes (at most %d)", errNotFrame, kind, length, maxFrame)
	}
	payload = make([]byte, length)
	if _, err := io.ReadFull(in, payload); err != nil {
		return kind, nil, fmt.Errorf("%q frame of %d bytes: %w", kind, length, noEOF(err))
	}
	return kind, payload, nil
}

// noEOF turns an end of stream inside a frame into the error it is.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readHello reads the worker's first frame and checks its protocol.
// what names the worker in the error.
func readHello(in *bufio.Reader) (Hello, error) {
	first, err := in.Peek(1)
	if err == nil && first[0] != frameHello {
		// Not a worker: show what it wrote (as much as has arrived).
		began, _ := in.Peek(min(in.Buffered(), 80))
		return Hello{}, fmt.Errorf("it did not answer the handshake of protocol %d; its output began %q "+
			"(is the command an `exactly loadgen worker` of this version?)", Protocol, began)
	}
	kind, payload, err := readFrame(in)
	if err != nil && !errors.Is(err, io.EOF) || err == nil && kind != frameHello {
		return Hello{}, fmt.Errorf("its hello frame does not decode (%v): is the command an `exactly loadgen worker` of this version?", err)
	}
	if err != nil {
		return Hello{}, errors.New("it wrote nothing before its output ended")
	}
	var hello Hello
	if err := json.Unmarshal(payload, &hello); err != nil {
		return Hello{}, fmt.Errorf("its hello %q: %w", payload, err)
	}
	if hello.Protocol != Protocol {
		return hello, fmt.Errorf("it speaks worker protocol %d and this load generator %d: run the same exactly version on every worker (worker: %s)",
			hello.Protocol, Protocol, hello.Version)
	}
	return hello, nil
}
