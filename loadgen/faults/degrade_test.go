package faults

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/internal/netem"
)

// medianRoundTrip sends n requests one at a time and returns the median
// time to each response.
func medianRoundTrip(t *testing.T, client *rawClient, n int, firstID int32) time.Duration {
	t.Helper()
	var trips []time.Duration
	for i := range int32(n) {
		start := time.Now()
		client.send(t, firstID+i)
		if id, _, err := client.receive(); err != nil || id != firstID+i {
			t.Fatalf("request %d: got %d, %v", firstID+i, id, err)
		}
		trips = append(trips, time.Since(start))
	}
	slices.Sort(trips)
	return trips[n/2]
}

// TestDegradeRoundTripIsWhatItSays: a degrade rule of one-way delay d both
// ways makes the measured round trip 2d, within 10 %, at the round trips
// a sweep uses (5 and 50 ms); with no delay, the proxy path adds well
// under a millisecond (10 % of the next step, 1 ms).
func TestDegradeRoundTripIsWhatItSays(t *testing.T) {
	t.Parallel()
	for _, rtt := range []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			t.Parallel()
			upstream := newFakeUpstream(t)
			rule := Rule{Action: ActionDegrade, Network: Network{Delay: Duration(rtt / 2)}}
			proxy := newProxy(t, upstream.addr(), 1, rule)
			client := dialRaw(t, proxy.Addrs()[0])
			n := 31
			if rtt >= 50*time.Millisecond {
				n = 9
			}
			median := medianRoundTrip(t, client, n, 1)
			t.Logf("configured round trip %v, measured median %v over %d", rtt, median, n)
			if rtt == 0 {
				if median > time.Millisecond {
					t.Fatalf("no delay configured, median round trip %v", median)
				}
				return
			}
			if low, high := rtt-rtt/10, rtt+rtt/10; median < low || median > high {
				t.Fatalf("configured round trip %v, measured median %v (want %v..%v)", rtt, median, low, high)
			}
		})
	}
}

// TestDegradePipelines: a slow network delays every frame but keeps the
// connection pipelining: 20 requests sent at once all come back after
// about one round trip, not twenty (a delay rule would hold each in turn).
func TestDegradePipelines(t *testing.T) {
	t.Parallel()
	const oneWay = 20 * time.Millisecond
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), 1, Rule{Action: ActionDegrade, Network: Network{Delay: Duration(oneWay)}})
	client := dialRaw(t, proxy.Addrs()[0])
	start := time.Now()
	for id := range int32(20) {
		client.send(t, id)
	}
	for id := range int32(20) {
		if got, _, err := client.receive(); err != nil || got != id {
			t.Fatalf("response %d: got %d, %v", id, got, err)
		}
	}
	if elapsed := time.Since(start); elapsed < 2*oneWay || elapsed > 5*2*oneWay {
		t.Fatalf("20 pipelined requests took %v, want one round trip of %v (and well under 20)", elapsed, 2*oneWay)
	}
	events := proxy.Log().Events()
	if len(events) != 1 || events[0].Kind != KindDegrade {
		t.Fatalf("events %v, want one degrade event", events)
	}
}

// TestDegradeDirectionAndWindow: a to-broker rule delays requests only,
// and a rule with a window slows nothing before it opens.
func TestDegradeDirectionAndWindow(t *testing.T) {
	t.Parallel()
	const oneWay = 30 * time.Millisecond
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), 1,
		Rule{Action: ActionDegrade, Direction: DirectionToBroker, Network: Network{Delay: Duration(oneWay)}},
		Rule{Action: ActionDegrade, Direction: DirectionToClient, After: Duration(time.Hour), Network: Network{Delay: Duration(time.Hour)}})
	client := dialRaw(t, proxy.Addrs()[0])
	median := medianRoundTrip(t, client, 5, 1)
	if median < oneWay || median > oneWay+oneWay/2 {
		t.Fatalf("round trip %v with %v to the broker only", median, oneWay)
	}
	if got := proxy.Log().Count(KindDegrade); got != 1 {
		t.Fatalf("%d degrade events, want 1 (the windowed rule never opened)", got)
	}
}

// TestDegradeRateCap: a bandwidth cap paces frames: 50 requests of 10 KB
// at 1 MB/s to the broker take at least half a second.
func TestDegradeRateCap(t *testing.T) {
	t.Parallel()
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), 1,
		Rule{Action: ActionDegrade, Direction: DirectionToBroker, Network: Network{Rate: 1_000_000}})
	client := dialRaw(t, proxy.Addrs()[0])
	payload := make([]byte, 10_000)
	start := time.Now()
	for id := range int32(50) {
		if _, err := client.conn.Write(requestFrame(testAPI, testVersion, id, payload)); err != nil {
			t.Fatal(err)
		}
	}
	for id := range int32(50) {
		if got, _, err := client.receive(); err != nil || got != id {
			t.Fatalf("response %d: got %d, %v", id, got, err)
		}
	}
	if elapsed := time.Since(start); elapsed < 500*time.Millisecond {
		t.Fatalf("500 KB at 1 MB/s passed in %v", elapsed)
	}
}

// TestDegradeLossRetransmits: with loss every frame is held a
// retransmission timeout, and each hold is an event.
func TestDegradeLossRetransmits(t *testing.T) {
	t.Parallel()
	const retransmit = 40 * time.Millisecond
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), 1,
		Rule{Action: ActionDegrade, Direction: DirectionToClient, Network: Network{Loss: 1, Retransmit: Duration(retransmit)}})
	client := dialRaw(t, proxy.Addrs()[0])
	if median := medianRoundTrip(t, client, 3, 1); median < retransmit {
		t.Fatalf("round trip %v with every response lost once, want at least %v", median, retransmit)
	}
	if got := proxy.Log().Count(KindRetransmit); got != 3 {
		t.Fatalf("%d retransmit events, want 3", got)
	}
}

func TestDegradeRuleValidation(t *testing.T) {
	good := []string{
		"action: degrade\ndelay: 10ms\n",
		"action: degrade\n",
		"action: degrade\ndirection: to-client\ndelay: 5ms\njitter: 8ms\ndistribution: normal\nrate: 100mbit\nloss: 0.01\nafter: 1s\nuntil: 5s\n",
	}
	for _, text := range good {
		if _, err := ParsePlan([]byte("name: x\nrules:\n  - " + strings.ReplaceAll(text, "\n", "\n    ") + "\n")); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
	bad := map[string]string{
		"action: degrade\nprobability: 0.5\n":           "no probability",
		"action: degrade\napis: [Produce]\n":            "apis does not apply",
		"action: degrade\nduration: 1s\n":               "phase and duration",
		"action: degrade\ndirection: sideways\n":        "direction",
		"action: degrade\nrate: fast\n":                 "rate",
		"action: degrade\nloss: 2\n":                    "loss",
		"action: degrade\ndelay: 1ms\njitter: 5ms\n":    "exceeds the delay",
		"action: delay\nduration: 1s\ndelay: 5ms\n":     "degrade only",
		"action: drop-response\ndirection: to-client\n": "degrade only",
	}
	for text, want := range bad {
		_, err := ParsePlan([]byte("name: x\nrules:\n  - " + strings.ReplaceAll(text, "\n", "\n    ") + "\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to say %q", text, err, want)
		}
	}
	rule := Rule{Action: ActionDegrade, Network: Network{Delay: Duration(5 * time.Millisecond), Rate: 1_000_000}}
	if got := rule.String(); got != "degrade both (delay 5ms, rate 1MB/s)" {
		t.Errorf("String = %q", got)
	}
	if link := rule.Network.Link(); link != (netem.Link{Delay: 5 * time.Millisecond, Rate: 1_000_000}) {
		t.Errorf("Link = %+v", link)
	}
}

// TestDegradeWindowFromStartClock: a window counts from StartClock (the
// load's start), not from the proxy's creation: a rule opening 1 s in
// does not slow a request right after the proxy starts when the clock was
// moved an hour back, and does once it was moved to now - 1 s.
func TestDegradeWindowFromStartClock(t *testing.T) {
	t.Parallel()
	const oneWay = 30 * time.Millisecond
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), 1,
		Rule{Action: ActionDegrade, After: Duration(time.Second), Until: Duration(time.Hour), Network: Network{Delay: Duration(oneWay)}})
	client := dialRaw(t, proxy.Addrs()[0])
	if rtt := medianRoundTrip(t, client, 3, 1); rtt >= oneWay {
		t.Fatalf("round trip %v before the window opened", rtt)
	}
	proxy.StartClock(time.Now().Add(-2 * time.Hour))
	if rtt := medianRoundTrip(t, client, 3, 10); rtt >= oneWay {
		t.Fatalf("round trip %v after the window closed", rtt)
	}
	proxy.StartClock(time.Now().Add(-time.Second))
	if rtt := medianRoundTrip(t, client, 3, 20); rtt < 2*oneWay {
		t.Fatalf("round trip %v inside the window, want at least %v", rtt, 2*oneWay)
	}
}
