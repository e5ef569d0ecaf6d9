package main

import (
	"fmt"
	"io"
)

func runCluster(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cluster", `Runs N brokers on loopback as one cluster: a metadata quorum on Raft, partitions
replicated to replication.factor brokers, acks=all waiting for the in-sync replicas
(min.insync.replicas), so a partition with n replicas survives n-1 broker failures.`, stderr)
	fs.Int("brokers", 3, "number of brokers to run")
	fs.String("data-dir", "", "directory holding one data directory per broker")
	fs.String("listen", "127.0.0.1:9092", "first broker's listen address; the others take the following ports")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return fmt.Errorf("%w: replication and the Raft metadata quorum arrive with the cluster issue; run 'exactly broker' for a single node", errNotYetAvailable)
}
