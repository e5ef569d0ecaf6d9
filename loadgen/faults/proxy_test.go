package faults

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// A request written one byte per TCP write, then five requests pipelined in
// one write (with an acks=0 Produce, which has no response, in the middle),
// all arrive upstream in order and every response comes back to its request;
// the upstream also answers byte by byte.
func TestSplitFramesAndPipelining(t *testing.T) {
	t.Parallel()
	upstream := newFakeUpstream(t)
	upstream.splitResp = true
	proxy := newProxy(t, upstream.addr(), 1)
	client := dialRaw(t, proxy.Addrs()[0])

	frame := requestFrame(testAPI, testVersion, 100, []byte("split"))
	for i := range frame {
		if _, err := client.conn.Write(frame[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	id, body, err := client.receive()
	if err != nil || id != 100 || string(body) != "split" {
		t.Fatalf("split request: got id %d body %q err %v, want 100 \"split\"", id, body, err)
	}

	var pipelined []byte
	for id := int32(101); id <= 105; id++ {
		if id == 103 {
			pipelined = append(pipelined, requestFrame(wire.APIProduce, 3, id, produceBody(0))...)
			continue
		}
		pipelined = append(pipelined, requestFrame(testAPI, testVersion, id, []byte{byte(id)})...)
	}
	if _, err := client.conn.Write(pipelined); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int32{101, 102, 104, 105} {
		id, body, err := client.receive()
		if err != nil || id != want || len(body) != 1 || body[0] != byte(want) {
			t.Fatalf("pipelined: got id %d body %v err %v, want %d", id, body, err, want)
		}
	}
	seen := upstream.waitFor(t, "6 requests", func(seen []seenRequest, _ int) bool { return len(seen) == 6 })
	if got, want := correlationIDs(seen), []int32{100, 101, 102, 103, 104, 105}; !slices.Equal(got, want) {
		t.Fatalf("upstream saw %v, want %v", got, want)
	}
	if total := proxy.Log().Total(); total != 0 {
		t.Fatalf("no rules, yet %d events: %v", total, proxy.Log().Events())
	}
}

// drop-request: the upstream never sees the request, the client's
// connection is cut, and only the chosen request is affected.
func TestDropRequest(t *testing.T) {
	t.Parallel()
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), 1, Rule{Action: ActionDropRequest, APIs: apis(testAPI), Every: 3})
	client := dialRaw(t, proxy.Addrs()[0])
	for id := int32(1); id <= 2; id++ {
		client.send(t, id)
		if got, _, err := client.receive(); err != nil || got != id {
			t.Fatalf("request %d: got %d, %v", id, got, err)
		}
	}
	client.send(t, 3)
	client.expectClosed(t)
	// Once the proxy has closed its upstream connection nothing more can
	// arrive from this client.
	seen := upstream.waitFor(t, "the upstream connection to end", func(_ []seenRequest, closed int) bool { return closed == 1 })
	if got := correlationIDs(seen); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("upstream saw %v, want [1 2]: the dropped request reached it", got)
	}
	if got := eventIDs(proxy.Log().Events(), KindDropRequest); !slices.Equal(got, []int32{3}) {
		t.Fatalf("drop-request events on %v, want [3]", got)
	}
	if events := proxy.Log().Events(); events[0].Broker != upstream.addr() || events[0].APIKey != testAPI {
		t.Fatalf("event %+v: want broker %s, API %d", events[0], upstream.addr(), testAPI)
	}
}

// drop-response: the upstream processes the request, the client gets no
// response and a closed connection.
func TestDropResponse(t *testing.T) {
	t.Parallel()
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), 1, Rule{Action: ActionDropResponse, APIs: apis(testAPI), First: 1})
	client := dialRaw(t, proxy.Addrs()[0])
	client.send(t, 7)
	client.expectClosed(t)
	seen := upstream.waitFor(t, "request 7", func(seen []seenRequest, _ int) bool { return len(seen) == 1 })
	if seen[0].correlationID != 7 {
		t.Fatalf("upstream saw %v, want [7]", correlationIDs(seen))
	}
	if got := eventIDs(proxy.Log().Events(), KindDropResponse); !slices.Equal(got, []int32{7}) {
		t.Fatalf("drop-response events on %v, want [7]", got)
	}
	// first: 1 means a new connection is no longer affected.
	again := dialRaw(t, proxy.Addrs()[0])
	again.send(t, 8)
	if got, _, err := again.receive(); err != nil || got != 8 {
		t.Fatalf("after the first drop: got %d, %v; want response 8", got, err)
	}
	if counts := proxy.Log().Counts(); counts[KindDropResponse] != 1 || len(counts) != 1 {
		t.Fatalf("counts %v, want one drop-response", counts)
	}
}

// delay holds a request (upstream receives it late) or a response (the
// client receives it late) by at least the rule's duration.
func TestDelay(t *testing.T) {
	t.Parallel()
	const delay = 150 * time.Millisecond
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), 1,
		Rule{Action: ActionDelay, APIs: apis(testAPI), First: 1, Duration: Duration(delay)},
		Rule{Action: ActionDelay, APIs: apis(wire.APIProduce), Phase: PhaseResponse, Duration: Duration(delay)},
	)
	client := dialRaw(t, proxy.Addrs()[0])
	sent := time.Now()
	client.send(t, 1)
	if id, _, err := client.receive(); err != nil || id != 1 {
		t.Fatalf("delayed request: got %d, %v", id, err)
	}
	seen := upstream.waitFor(t, "request 1", func(seen []seenRequest, _ int) bool { return len(seen) == 1 })
	if waited := seen[0].at.Sub(sent); waited < delay {
		t.Fatalf("upstream received the request after %v, want at least %v", waited, delay)
	}

	sent = time.Now()
	if _, err := client.conn.Write(requestFrame(wire.APIProduce, 3, 2, produceBody(1))); err != nil {
		t.Fatal(err)
	}
	if id, _, err := client.receive(); err != nil || id != 2 {
		t.Fatalf("delayed response: got %d, %v", id, err)
	}
	if waited := time.Since(sent); waited < delay {
		t.Fatalf("response after %v, want at least %v", waited, delay)
	}
	seen = upstream.waitFor(t, "request 2", func(seen []seenRequest, _ int) bool { return len(seen) == 2 })
	if waited := seen[1].at.Sub(sent); waited >= delay {
		t.Fatalf("response-phase delay held the request for %v", waited)
	}
	if got := eventIDs(proxy.Log().Events(), KindDelay); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("delay events on %v, want [1 2]", got)
	}
}

// reset: the client sees ECONNRESET; in the request phase the upstream
// never sees the request, in the response phase it does.
func TestReset(t *testing.T) {
	t.Parallel()
	for _, phase := range []Phase{PhaseRequest, PhaseResponse} {
		t.Run(string(phase), func(t *testing.T) {
			upstream := newFakeUpstream(t)
			proxy := newProxy(t, upstream.addr(), 1, Rule{Action: ActionReset, Phase: phase, Every: 2})
			client := dialRaw(t, proxy.Addrs()[0])
			client.send(t, 1)
			if id, _, err := client.receive(); err != nil || id != 1 {
				t.Fatalf("request 1: got %d, %v", id, err)
			}
			client.send(t, 2)
			if err := client.expectClosed(t); !isReset(err) {
				t.Fatalf("got %v, want connection reset", err)
			}
			seen := upstream.waitFor(t, "the upstream connection to end", func(_ []seenRequest, closed int) bool { return closed == 1 })
			want := []int32{1}
			if phase == PhaseResponse {
				want = []int32{1, 2}
			}
			if got := correlationIDs(seen); !slices.Equal(got, want) {
				t.Fatalf("upstream saw %v, want %v", got, want)
			}
			if got := eventIDs(proxy.Log().Events(), KindReset); !slices.Equal(got, []int32{2}) {
				t.Fatalf("reset events on %v, want [2]", got)
			}
		})
	}
}

// A clock-driven blackhole holds traffic on an open connection and on a
// new one until its window ends; nothing is lost, only late.
func TestBlackholeScheduled(t *testing.T) {
	t.Parallel()
	const window = 300 * time.Millisecond
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), 1, Rule{Action: ActionBlackhole, Until: Duration(window)})
	client := dialRaw(t, proxy.Addrs()[0])
	client.send(t, 1)
	if id, _, err := client.receive(); err != nil || id != 1 {
		t.Fatalf("got %d, %v", id, err)
	}
	end := proxy.Start().Add(window)
	seen := upstream.waitFor(t, "request 1", func(seen []seenRequest, _ int) bool { return len(seen) == 1 })
	if seen[0].at.Before(end) {
		t.Fatalf("upstream received the request %v before the blackhole ended", end.Sub(seen[0].at))
	}
	if counts := proxy.Log().Counts(); counts[KindBlackhole] != 1 {
		t.Fatalf("counts %v, want one blackhole", counts)
	}
}

// A triggered blackhole starts on the matching request and holds it, and a
// connection opened during it, for the rule's duration.
func TestBlackholeTriggered(t *testing.T) {
	t.Parallel()
	const duration = 300 * time.Millisecond
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), 1, Rule{Action: ActionBlackhole, APIs: apis(testAPI), First: 1, Duration: Duration(duration)})
	first := dialRaw(t, proxy.Addrs()[0])
	first.send(t, 1)
	events := waitEvents(t, proxy.Log(), 1)
	blackholeEnd := events[0].Time.Add(duration)

	second := dialRaw(t, proxy.Addrs()[0])
	second.send(t, 2)
	for _, c := range []*rawClient{first, second} {
		if _, _, err := c.receive(); err != nil {
			t.Fatal(err)
		}
	}
	seen := upstream.waitFor(t, "both requests", func(seen []seenRequest, _ int) bool { return len(seen) == 2 })
	for _, s := range seen {
		if s.at.Before(blackholeEnd) {
			t.Fatalf("request %d reached the upstream %v before the blackhole ended", s.correlationID, blackholeEnd.Sub(s.at))
		}
	}
	if got := eventIDs(proxy.Log().Events(), KindBlackhole); !slices.Equal(got, []int32{1}) {
		t.Fatalf("blackhole events on %v, want [1]", got)
	}
}

// waitEvents waits until the log holds at least n events.
func waitEvents(t *testing.T, log *EventLog, n int) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := log.WaitFor(ctx, func(events []Event) bool { return len(events) >= n }); err != nil {
		t.Fatalf("%v: %v", err, log.Events())
	}
	return log.Events()
}

// dropRun sends requests 0..count-1 one at a time through a proxy dropping
// 20% of responses, reconnecting after each cut, and returns the
// correlation ids whose responses were dropped.
func dropRun(t *testing.T, seed int64, count int32) []int32 {
	upstream := newFakeUpstream(t)
	proxy := newProxy(t, upstream.addr(), seed, Rule{Action: ActionDropResponse, APIs: apis(testAPI), Probability: probability(0.2)})
	var client *rawClient
	var lost []int32
	for id := range count {
		if client == nil {
			client = dialRaw(t, proxy.Addrs()[0])
		}
		client.send(t, id)
		if _, _, err := client.receive(); err != nil {
			lost = append(lost, id)
			client.conn.Close()
			client = nil
		}
	}
	if got := eventIDs(proxy.Log().Events(), KindDropResponse); !slices.Equal(got, lost) {
		t.Fatalf("events on %v, client lost %v", got, lost)
	}
	return lost
}

// The same seed fires on the same correlation ids; another seed does not.
func TestSeedDeterminism(t *testing.T) {
	t.Parallel()
	const count = 60
	first := dropRun(t, 42, count)
	second := dropRun(t, 42, count)
	other := dropRun(t, 43, count)
	t.Logf("seed 42 dropped %v; seed 43 dropped %v", first, other)
	if len(first) == 0 || len(first) == count {
		t.Fatalf("20%% of %d dropped %d", count, len(first))
	}
	if !slices.Equal(first, second) {
		t.Fatalf("same seed, different faults: %v vs %v", first, second)
	}
	if slices.Equal(first, other) {
		t.Fatalf("seeds 42 and 43 fired on the same requests %v", first)
	}
}
