package quorum

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// The forwarding RPC. Raft only lets the leader append, so a request made
// on any other node (a follower voter or a non-voter) is sent to the
// leader's RPC address (VoterAddrs.RPC of the leader's node id, learnt from
// raft), executed there, and the answer sent back.
//
// Wire format, over plain TCP: each message is a 4-byte big-endian length n
// followed by n bytes of JSON; a connection carries requests and responses
// strictly alternating, client first. The client opens a connection per
// request (metadata requests and heartbeats are a few per second) with the
// request's context deadline as the connection deadline. A response's Code
// names the sentinel its Error wraps (sentinelName, remoteError), so
// errors.Is works across the RPC. Messages over maxRPCMessage bytes close
// the connection.
const maxRPCMessage = 4 << 20

// rpcOp names a request.
type rpcOp string

const (
	opRegister          rpcOp = "register_broker"
	opHeartbeat         rpcOp = "heartbeat"
	opCreateTopic       rpcOp = "create_topic"
	opDeleteTopic       rpcOp = "delete_topic"
	opCreatePartitions  rpcOp = "create_partitions"
	opAlterPartition    rpcOp = "alter_partition"
	opSetTopicConfigs   rpcOp = "set_topic_configs"
	opSetGroupConfigs   rpcOp = "set_group_configs"
	opJoin              rpcOp = "join"
	opAlterReassignment rpcOp = "alter_reassignment"
	opElectLeader       rpcOp = "elect_leader"
)

// rpcRequest is one request; Op says which one field is set.
type rpcRequest struct {
	Op                rpcOp                 `json:"op"`
	Register          *BrokerRegistration   `json:"register,omitempty"`
	Heartbeat         *heartbeatRequest     `json:"heartbeat,omitempty"`
	ProducerIDs       *allocatePIDsCmd      `json:"allocate_producer_ids,omitempty"`
	CreateTopic       *CreateTopicRequest   `json:"create_topic,omitempty"`
	DeleteTopic       *deleteTopicCmd       `json:"delete_topic,omitempty"`
	CreatePartitions  *createPartitionsCmd  `json:"create_partitions,omitempty"`
	AlterPartition    *alterPartitionCmd    `json:"alter_partition,omitempty"`
	SetTopicConfigs   *setTopicConfigsCmd   `json:"set_topic_configs,omitempty"`
	SetGroupConfigs   *setGroupConfigsCmd   `json:"set_group_configs,omitempty"`
	Join              *joinRequest          `json:"join,omitempty"`
	AlterReassignment *alterReassignmentCmd `json:"alter_reassignment,omitempty"`
	ElectLeader       *electLeaderCmd       `json:"elect_leader,omitempty"`
}

type heartbeatRequest struct {
	ID    int32 `json:"id"`
	Epoch int64 `json:"epoch"`
}

// joinRequest asks the leader to add a node as a raft non-voter.
type joinRequest struct {
	ID   int32  `json:"id"`
	Raft string `json:"raft"`
}

// rpcResponse is the answer: Error/Code when the request failed, else the
// log index of the command it wrote (0 if none) and its result.
type rpcResponse struct {
	Error     string     `json:"error,omitempty"`
	Code      string     `json:"code,omitempty"`
	Index     uint64     `json:"index,omitempty"`
	Epoch     int64      `json:"epoch,omitempty"`
	PIDStart  int64      `json:"producer_id_start,omitempty"` // an allocated block's first producer id
	Topic     *Topic     `json:"topic,omitempty"`
	Partition *Partition `json:"partition,omitempty"`
}

// err returns the response's error, wrapping the named sentinel.
func (r *rpcResponse) err() error {
	if r.Error == "" {
		return nil
	}
	return &remoteError{sentinel: sentinels[r.Code], msg: r.Error}
}

func writeMessage(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(body) > maxRPCMessage {
		return fmt.Errorf("message of %d bytes, more than %d", len(body), maxRPCMessage)
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err = w.Write(buf)
	return err
}

func readMessage(r io.Reader, v any) error {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > maxRPCMessage {
		return fmt.Errorf("message of %d bytes, more than %d", n, maxRPCMessage)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// rpcServer accepts forwarded requests. Goroutines: one accept loop, one per
// connection; all end on close (which closes the listener and every open
// connection) and close waits for them.
type rpcServer struct {
	listener net.Listener
	handle   func(context.Context, rpcRequest) rpcResponse
	logger   *slog.Logger
	ctx      context.Context // cancelled by close
	cancel   context.CancelFunc

	mu    sync.Mutex // guards conns
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startRPCServer(addr string, handle func(context.Context, rpcRequest) rpcResponse, logger *slog.Logger) (*rpcServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("quorum: rpc listen %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &rpcServer{listener: ln, handle: handle, logger: logger, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

func (s *rpcServer) acceptLoop() {
	defer s.wg.Done()
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(conn)
	}
}

// rpcHandleTimeout bounds one request's execution on the leader.
const rpcHandleTimeout = 10 * time.Second

func (s *rpcServer) serve(conn net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	for {
		var req rpcRequest
		if err := readMessage(conn, &req); err != nil {
			if !errors.Is(err, io.EOF) && s.ctx.Err() == nil {
				s.logger.Debug("quorum: rpc read", "remote", conn.RemoteAddr(), "err", err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, rpcHandleTimeout)
		resp := s.handle(ctx, req)
		cancel()
		if err := writeMessage(conn, resp); err != nil {
			return
		}
	}
}

func (s *rpcServer) close() {
	s.mu.Lock()
	s.cancel()
	s.listener.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// callRPC sends one request to addr (dialed with dialer) and returns the response. A transport
// failure is returned as an error wrapping errTransport (retried by the
// caller); an error the remote side answered is in the response.
func callRPC(ctx context.Context, dialer net.Dialer, addr string, req rpcRequest) (rpcResponse, error) {
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return rpcResponse{}, fmt.Errorf("%w: dial %s: %v", errTransport, addr, err)
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(rpcHandleTimeout + time.Second)
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := writeMessage(conn, req); err != nil {
		return rpcResponse{}, fmt.Errorf("%w: send to %s: %v", errTransport, addr, err)
	}
	var resp rpcResponse
	if err := readMessage(conn, &resp); err != nil {
		return rpcResponse{}, fmt.Errorf("%w: receive from %s: %v", errTransport, addr, err)
	}
	return resp, nil
}

// errTransport marks an RPC that failed in transport (the controller may
// have moved or died): the caller retries.
var errTransport = errors.New("quorum: rpc transport")
