package clusternode

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/internal/testutil"
)

// requestTo sends req to the broker at addr alone.
func requestTo(addr string, req kmsg.Request) (kmsg.Response, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Broker(math.MinInt32).Request(ctx, req)
}

// setGroupConfig sets one config of group through the broker at addr.
func setGroupConfig(t *testing.T, addr, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := requestTo(addr, req)
	if err != nil {
		t.Fatalf("set %s of group %s through %s: %v", name, group, addr, err)
	}
	if r := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("set %s of group %s through %s: error %d %v", name, group, addr, r.ErrorCode, r.ErrorMessage)
	}
}

// groupConfigIs checks one group config as the broker at addr describes it.
func groupConfigIs(addr, group, name, want string) error {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{name}
	req.Resources = append(req.Resources, res)
	resp, err := requestTo(addr, req)
	if err != nil {
		return err
	}
	described := resp.(*kmsg.DescribeConfigsResponse).Resources
	if len(described) != 1 || described[0].ErrorCode != 0 || len(described[0].Configs) != 1 {
		return fmt.Errorf("DescribeConfigs of group %s: %+v", group, described)
	}
	c := described[0].Configs[0]
	if c.Value == nil || *c.Value != want || c.Source != kmsg.ConfigSourceGroupConfig {
		return fmt.Errorf("group %s %s is %v from %v, want %s from GROUP_CONFIG", group, name, c.Value, c.Source, want)
	}
	return nil
}

// TestGroupConfigsAcrossTheCluster: a group config set through one broker
// is described by every other, and one set while a member is down is
// described by that member once it is back.
func TestGroupConfigsAcrossTheCluster(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, 3, nil)
	c.waitMetadata(3, "", 0)
	setGroupConfig(t, c.listen[1], "shared", "share.record.lock.duration.ms", "15000")
	for _, id := range []int32{2, 3} {
		testutil.Until(t, 20*time.Second, fmt.Sprintf("broker %d describes the group config", id), func() bool {
			return groupConfigIs(c.listen[id], "shared", "share.record.lock.duration.ms", "15000") == nil
		})
	}

	c.stop(3)
	setGroupConfig(t, c.listen[2], "shared", "share.auto.offset.reset", "earliest")
	c.start(3)
	testutil.Until(t, 30*time.Second, "the restarted broker describes the config set while it was down", func() bool {
		return groupConfigIs(c.listen[3], "shared", "share.auto.offset.reset", "earliest") == nil &&
			groupConfigIs(c.listen[3], "shared", "share.record.lock.duration.ms", "15000") == nil
	})
}
