package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replicatedRoundTrip creates topic with one partition replicated 3
// times through cl (whose default produce topic and consumed partition it
// must be), produces n records with the client's acks, reads them back in
// order and checks that Metadata lists 3 replicas — and with inSync, 3 in
// the ISR. The cluster tests of `exactly cluster` and of members started
// from server.properties share it.
func replicatedRoundTrip(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, n int, inSync bool) {
	t.Helper()
	create := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 3
	create.Topics, create.TimeoutMillis = append(create.Topics, rt), 30000
	created, err := create.RequestWith(ctx, cl)
	if err != nil || created.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics %s: %v %+v", topic, err, created)
	}
	if rf := created.Topics[0].ReplicationFactor; rf != 3 {
		t.Errorf("created with replication factor %d, want 3", rf)
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%04d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	var read []string
	for len(read) < n && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("fetch: %v", err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) { read = append(read, string(r.Value)) })
	}
	for i, v := range read {
		if v != fmt.Sprintf("%04d", i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}
	if len(read) != n {
		t.Fatalf("read %d of %d records", len(read), n)
	}
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range meta.Topics {
		if mt.Topic == nil || *mt.Topic != topic {
			continue
		}
		if len(mt.Partitions) != 1 || len(mt.Partitions[0].Replicas) != 3 || (inSync && len(mt.Partitions[0].ISR) != 3) {
			t.Errorf("%s in Metadata: %+v (error %v)", topic, mt.Partitions, kerr.ErrorForCode(mt.ErrorCode))
		}
	}
}
