package broker

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups end to end with franz-go's share consumer: records
// produced before the consumers join are shared between two members,
// each accepted once; a record released once comes back with delivery
// count 2.
func TestShareGroupSharesAndRedeliversReleased(t *testing.T) {
	t.Parallel()
	const total = 2000
	b, m := startMetricsBroker(t, nil)
	admin := newTestClient(t, b, kgo.DefaultProduceTopic("share-in"))
	createTopic(t, admin, "share-in", 3, nil)
	ctx := testContext(t, 60*time.Second)
	setGroupConfig(t, admin, "sg", "share.auto.offset.reset", "earliest")
	for i := range total {
		admin.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), nil)
	}
	if err := admin.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	accepted := map[string]int{}
	released := map[string]bool{}
	maxCount := map[string]int32{}
	var wg sync.WaitGroup
	consume := func() {
		defer wg.Done()
		cl := newTestClient(t, b, kgo.ShareGroup("sg"), kgo.ConsumeTopics("share-in"))
		for {
			mu.Lock()
			n := len(accepted)
			mu.Unlock()
			if n == total || ctx.Err() != nil {
				break
			}
			pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			fetches := cl.PollFetches(pollCtx)
			cancel()
			for r := range fetches.RecordsAll() {
				key := string(r.Value)
				mu.Lock()
				if r.DeliveryCount() > maxCount[key] {
					maxCount[key] = r.DeliveryCount()
				}
				if !released[key] && len(key) > 0 && key[len(key)-1] == '7' {
					released[key] = true
					mu.Unlock()
					r.Ack(kgo.AckRelease)
					continue
				}
				accepted[key]++
				mu.Unlock()
				r.Ack(kgo.AckAccept)
			}
		}
		flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.FlushAcks(flushCtx); err != nil {
			t.Errorf("flush acks: %v", err)
		}
	}
	wg.Add(2)
	go consume()
	go consume()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(accepted) != total {
		t.Fatalf("accepted %d distinct records, want %d", len(accepted), total)
	}
	for key, n := range accepted {
		if n != 1 {
			t.Errorf("record %s accepted %d times", key, n)
		}
	}
	for key := range released {
		if maxCount[key] < 2 {
			t.Errorf("released record %s came back with delivery count %d, want 2", key, maxCount[key])
		}
	}
	// The leader's metrics count the same.
	share := func(event string) float64 {
		return mustMetric(t, m, "exactly_share_records_total", map[string]string{"event": event})
	}
	if got := share("accepted"); got != total {
		t.Errorf("accepted metric %v, want %d", got, total)
	}
	if got, want := share("released"), float64(len(released)); got != want {
		t.Errorf("released metric %v, want %v", got, want)
	}
	if got, want := share("redelivered"), float64(len(released)); got < want {
		t.Errorf("redelivered metric %v, want at least %v", got, want)
	}
	if got, want := share("acquired"), float64(total+len(released)); got < want {
		t.Errorf("acquired metric %v, want at least %v", got, want)
	}
}

// setGroupConfig sets one group config (IncrementalAlterConfigs SET on
// the GROUP resource).
func setGroupConfig(t *testing.T, client *kgo.Client, groupID, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, groupID
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), client)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("set %s=%s on group %s: %v", name, value, groupID, err)
	}
}
