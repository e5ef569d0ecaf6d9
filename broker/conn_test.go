package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/exactly-eos/exactly/wire"
)

// TestKmsgAdapterEncodesBeforeRelease checks the order the one kmsg
// adapter keeps: decoded []byte fields alias the request frame, so a
// response that carries them back must be encoded before the frame is
// released. Released frames are poisoned, so releasing first would send
// poison bytes instead of the assignment.
func TestKmsgAdapterEncodesBeforeRelease(t *testing.T) {
	poisonReleasedFrames.Store(true)
	t.Cleanup(func() { poisonReleasedFrames.Store(false) })

	// echo answers a SyncGroup with the first assignment of the request:
	// a response aliasing the request's bytes.
	echo := func(req *kmsg.SyncGroupRequest) kmsg.Response {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.MemberAssignment = req.GroupAssignment[0].MemberAssignment
		return resp
	}
	adapters := map[string]handlerFunc{
		"kmsgHandler": kmsgHandler(func(_ *connection, req *kmsg.SyncGroupRequest) kmsg.Response { return echo(req) }),
		"kmsgAdapter in reader": kmsgAdapter(inReader, func(_ context.Context, _ *connection, req *kmsg.SyncGroupRequest) kmsg.Response {
			return echo(req)
		}),
		"kmsgAdapter parked": kmsgAdapter(parks, func(_ context.Context, _ *connection, req *kmsg.SyncGroupRequest) kmsg.Response {
			return echo(req)
		}),
	}
	for name, handle := range adapters {
		t.Run(name, func(t *testing.T) {
			assignment := []byte("assignment bytes that alias the request frame")
			syncGroup := kmsg.NewPtrSyncGroupRequest()
			syncGroup.Version = 3 // not flexible: a 4-byte response header
			syncGroup.Group, syncGroup.MemberID = "g", "m"
			assignmentEntry := kmsg.NewSyncGroupRequestGroupAssignment()
			assignmentEntry.MemberID, assignmentEntry.MemberAssignment = "m", bytes.Clone(assignment)
			syncGroup.GroupAssignment = append(syncGroup.GroupAssignment, assignmentEntry)

			buffer := bytebufferpool.Get()
			buffer.B = syncGroup.AppendTo(buffer.B[:0])
			req := &request{
				header: wire.RequestHeader{APIKey: wire.APISyncGroup, APIVersion: 3, CorrelationID: 42},
				body:   buffer.B, buffer: buffer,
				slot: &response{done: make(chan struct{})},
			}
			c := adapterTestConnection(t)
			handle(c, req)
			select {
			case <-req.slot.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the handler never completed its response slot")
			}
			if req.slot.frame == nil {
				t.Fatalf("no response frame (closeConnection=%v)", req.slot.closeConnection)
			}
			frame := req.slot.frame.B
			if got := binary.BigEndian.Uint32(frame[4:8]); got != 42 {
				t.Fatalf("correlation id %d, want 42", got)
			}
			resp := kmsg.NewPtrSyncGroupResponse()
			resp.Version = 3
			if err := resp.ReadFrom(frame[8:]); err != nil {
				t.Fatalf("decode response: %v", err)
			}
			if !bytes.Equal(resp.MemberAssignment, assignment) {
				t.Fatalf("response assignment %q, want %q: the frame was released before the response was encoded",
					resp.MemberAssignment, assignment)
			}
			req.slot.release()
		})
	}
}

// adapterTestConnection is the least of a connection the adapter reads:
// its context, its broker's context and a remote address.
func adapterTestConnection(t *testing.T) *connection {
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	brokerCtx, brokerCancel := context.WithCancel(context.Background())
	t.Cleanup(brokerCancel)
	return &connection{broker: &Broker{ctx: brokerCtx}, netConn: server, ctx: ctx, cancel: cancel}
}
