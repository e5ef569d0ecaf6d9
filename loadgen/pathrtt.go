package loadgen

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/wire"
)

// pathProbes is how many round trips measurePathRTT takes the median of.
const pathProbes = 11

// degrades reports whether a plan slows the network between the clients
// and the brokers.
func degrades(plan faults.Plan) bool {
	for _, rule := range plan.Rules {
		if rule.Action == faults.ActionDegrade {
			return true
		}
	}
	return false
}

// measurePathRTT is the median round trip of pathProbes ApiVersions
// requests sent one at a time to addr (a fault proxy's listener): what a
// client's request waits on the network under the plan's degrade rules,
// measured before the load, so that a sweep's table shows the round trip
// it measured beside the one it configured.
func measurePathRTT(addr string, timeout time.Duration) (time.Duration, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, fmt.Errorf("measure round trip to %s: %w", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	reader := wire.FrameReader{R: bufio.NewReader(conn), MaxSize: 1 << 20}
	var trips []time.Duration
	for i := range int32(pathProbes) {
		header := wire.RequestHeader{APIKey: wire.APIVersions, APIVersion: 0, CorrelationID: i,
			ClientID: []byte("exactly-loadgen-rtt"), HeaderVersion: wire.RequestHeaderVersion(wire.APIVersions, 0)}
		frame := wire.AppendRequestHeader(nil, header)
		start := time.Now()
		if _, err := conn.Write(append(wire.AppendInt32(nil, int32(len(frame))), frame...)); err != nil {
			return 0, fmt.Errorf("measure round trip to %s: %w", addr, err)
		}
		response, err := reader.Next(nil)
		if err != nil {
			return 0, fmt.Errorf("measure round trip to %s: %w", addr, err)
		}
		if id, _, err := wire.ParseResponseHeader(response, 0); err != nil || id != i {
			return 0, fmt.Errorf("measure round trip to %s: response %d to request %d (%v)", addr, id, i, err)
		}
		trips = append(trips, time.Since(start))
	}
	slices.Sort(trips)
	return trips[len(trips)/2], nil
}
