package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/exactly-eos/exactly/broker/clusternode"
	"github.com/exactly-eos/exactly/broker/quorum"
)

// rpcPortOffset is how far above a voter's Raft port its quorum RPC
// listens (documented in `exactly broker --help` and `exactly cluster
// --help`).
const rpcPortOffset = 100

// parseControllerQuorum parses Kafka's controller.quorum.voters shape,
// id@host:port,..., into the quorum's voter addresses: Raft on the port,
// RPC on port+rpcPortOffset. A node id not in the list needs listen, its
// own Raft address.
func parseControllerQuorum(text string, nodeID int32, listen string) (map[int32]quorum.VoterAddrs, error) {
	voters, err := quorumEntries(text)
	if err != nil {
		return nil, err
	}
	if _, ok := voters[nodeID]; !ok {
		if listen == "" {
			return nil, fmt.Errorf("--node-id %d is not in --controller-quorum: give --controller-listen host:port for this member's Raft transport", nodeID)
		}
		addrs, err := voterAddrs(listen)
		if err != nil {
			return nil, fmt.Errorf("--controller-listen: %w", err)
		}
		voters[nodeID] = addrs
	}
	return voters, nil
}

// quorumEntries parses id@host:port,... into each id's addresses.
func quorumEntries(text string) (map[int32]quorum.VoterAddrs, error) {
	voters := map[int32]quorum.VoterAddrs{}
	for _, entry := range strings.Split(text, ",") {
		idText, addr, ok := strings.Cut(strings.TrimSpace(entry), "@")
		if !ok {
			return nil, fmt.Errorf("--controller-quorum: %q is not id@host:port", entry)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("--controller-quorum: %q: the id must be a non-negative integer", entry)
		}
		if _, dup := voters[int32(id)]; dup {
			return nil, fmt.Errorf("--controller-quorum: id %d appears twice", id)
		}
		addrs, err := voterAddrs(addr)
		if err != nil {
			return nil, fmt.Errorf("--controller-quorum: %q: %w", entry, err)
		}
		voters[int32(id)] = addrs
	}
	return voters, nil
}

// voterAddrs derives the Raft and RPC addresses of one host:port.
func voterAddrs(addr string) (quorum.VoterAddrs, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return quorum.VoterAddrs{}, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 || port+rpcPortOffset > 65535 {
		return quorum.VoterAddrs{}, fmt.Errorf("port %q must be 1..%d", portText, 65535-rpcPortOffset)
	}
	return quorum.VoterAddrs{
		Raft: net.JoinHostPort(host, strconv.Itoa(int(port))),
		RPC:  net.JoinHostPort(host, strconv.Itoa(int(port)+rpcPortOffset)),
	}, nil
}

// memberBinds sets the quorum's listen addresses from --controller-listen
// (Raft there, RPC on port+rpcPortOffset; unset: the member's own
// --controller-quorum entry) and checks --source-address.
func memberBinds(cfg *clusternode.Config, controllerListen, sourceAddress string) error {
	if sourceAddress != "" && net.ParseIP(sourceAddress) == nil {
		return fmt.Errorf("--source-address %q: want an IP address", sourceAddress)
	}
	if controllerListen == "" {
		return nil
	}
	addrs, err := voterAddrs(controllerListen)
	if err != nil {
		return fmt.Errorf("--controller-listen: %w", err)
	}
	cfg.RaftListen, cfg.RPCListen = addrs.Raft, addrs.RPC
	return nil
}

// runMember runs one cluster member until ctx ends (a signal).
func runMember(ctx context.Context, cfg clusternode.Config, stdout io.Writer, logger *slog.Logger, served *brokerMetrics) error {
	m, err := clusternode.Start(cfg)
	if err != nil {
		return err
	}
	served.setReady(m.Broker().Ready)
	if len(cfg.Voters) == 0 {
		fmt.Fprintf(stdout, "exactly broker %d listening on %s (a cluster of one, its metadata quorum in process; data in %s)\n", cfg.NodeID, m.Addr(), cfg.DataDir)
		if listeners := m.Broker().Listeners(); len(listeners) > 1 {
			fmt.Fprintf(stdout, "listeners: %s\n", strings.Join(listeners, ","))
		}
	} else {
		fmt.Fprintf(stdout, "exactly broker %d listening on %s (cluster member; data in %s)\n", cfg.NodeID, m.Addr(), cfg.DataDir)
		fmt.Fprintln(stdout, quorumLine(cfg))
	}
	<-ctx.Done()
	logger.Info("signal received; shutting down")
	return m.Close()
}

// quorumLine says where this member's quorum listens: the Raft transport
// on the port given, the quorum's RPC on that port + rpcPortOffset.
func quorumLine(cfg clusternode.Config) string {
	raft, rpc := cfg.RaftListen, cfg.RPCListen
	if raft == "" {
		raft, rpc = cfg.Voters[cfg.NodeID].Raft, cfg.Voters[cfg.NodeID].RPC
	}
	role := "a voter"
	if !quorumVoter(cfg.Voters, cfg.NodeID) {
		role = "not a voter"
	}
	return fmt.Sprintf("quorum: node %d (%s of %d listed), Raft transport on %s, quorum RPC on %s (the Raft port + %d)",
		cfg.NodeID, role, len(cfg.Voters), raft, rpc, rpcPortOffset)
}

// quorumVoter reports whether id is one of the quorum's raft voters: the
// three lowest ids listed (quorum.Config.Voters).
func quorumVoter(voters map[int32]quorum.VoterAddrs, id int32) bool {
	lower := 0
	for other := range voters {
		if other < id {
			lower++
		}
	}
	_, listed := voters[id]
	return listed && lower < 3
}
