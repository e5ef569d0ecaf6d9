package netem

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for text, want := range map[string]int64{
		"10MB/s": 10_000_000, "100mbit": 12_500_000, "1Gbps": 125_000_000, "512KiB/s": 512 << 10,
		"1.5 MB": 1_500_000, "800B/s": 800,
	} {
		got, err := ParseRate(text)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", text, got, err, want)
		}
	}
	for _, bad := range []string{"", "10", "MB/s", "10 furlongs", "0MB/s", "-1MB"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
	if got := FormatRate(12_500_000); got != "12.5MB/s" {
		t.Errorf("FormatRate = %q", got)
	}
}

func TestLinkValidate(t *testing.T) {
	good := []Link{{}, {Delay: time.Millisecond}, {Delay: 5 * time.Millisecond, Jitter: 5 * time.Millisecond},
		{Delay: time.Millisecond, Jitter: 3 * time.Millisecond, Distribution: Normal}, {Rate: 1, Loss: 1}}
	for _, link := range good {
		if err := link.Validate(); err != nil {
			t.Errorf("%+v: %v", link, err)
		}
	}
	bad := []Link{{Delay: -1}, {Rate: -1}, {Loss: 1.5}, {Loss: math.NaN()}, {Jitter: time.Millisecond, Distribution: "pareto"},
		{Distribution: Normal}, {Delay: time.Millisecond, Jitter: 2 * time.Millisecond}}
	for _, link := range bad {
		if err := link.Validate(); err == nil {
			t.Errorf("%+v accepted", link)
		}
	}
}

// TestSampleDistributions: the jitter samples have the stated shape:
// uniform within ±jitter with the delay as mean, normal with the jitter
// as standard deviation, and loss at the stated rate per segment.
func TestSampleDistributions(t *testing.T) {
	const n = 20000
	delay, jitter := 10*time.Millisecond, 2*time.Millisecond
	moments := func(link Link) (mean, stddev float64, lost int) {
		var sum, squares float64
		for i := range uint64(n) {
			d, wasLost := link.sample(100, Unit(7, i, 1), Unit(7, i, 2), Unit(7, i, 3))
			if wasLost {
				lost++
				continue
			}
			if link.Distribution != Normal && (d < delay-jitter || d > delay+jitter) {
				t.Fatalf("uniform sample %v outside %v ± %v", d, delay, jitter)
			}
			sum += float64(d)
			squares += float64(d) * float64(d)
		}
		count := float64(n - lost)
		mean = sum / count
		return mean, math.Sqrt(squares/count - mean*mean), lost
	}
	mean, stddev, _ := moments(Link{Delay: delay, Jitter: jitter})
	if math.Abs(mean-float64(delay)) > 0.02*float64(delay) || math.Abs(stddev-float64(jitter)/math.Sqrt(3)) > 0.05*float64(jitter) {
		t.Errorf("uniform: mean %v stddev %v", time.Duration(mean), time.Duration(stddev))
	}
	mean, stddev, _ = moments(Link{Delay: delay, Jitter: jitter, Distribution: Normal})
	if math.Abs(mean-float64(delay)) > 0.02*float64(delay) || math.Abs(stddev-float64(jitter)) > 0.05*float64(jitter) {
		t.Errorf("normal: mean %v stddev %v", time.Duration(mean), time.Duration(stddev))
	}
	_, _, lost := moments(Link{Delay: delay, Loss: 0.01})
	if lost < n/100*8/10 || lost > n/100*12/10 {
		t.Errorf("loss 1%%: %d of %d lost", lost, n)
	}
	// A 10-segment send is lost about 10 times as often.
	if d, _ := (Link{Loss: 1}).sample(1, 0, 0, 0.999); d != DefaultRetransmit {
		t.Errorf("a lost send is held %v, want %v", d, DefaultRetransmit)
	}
}

// recorder is a destination that notes when each write arrived.
type recorder struct {
	mu     sync.Mutex
	writes [][]byte
	at     []time.Time
	fail   error
}

func (r *recorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return 0, r.fail
	}
	r.writes = append(r.writes, bytes.Clone(b))
	r.at = append(r.at, time.Now())
	return len(b), nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writes)
}

// TestLineDelaysInOrder: every send arrives after its delay, none
// overtakes an earlier one even when jitter would, and the bytes are
// those sent (the sender's buffer may be reused at once).
func TestLineDelaysInOrder(t *testing.T) {
	t.Parallel()
	dst := &recorder{}
	line := NewLine(dst, nil, 1, nil)
	defer line.Close()
	link := Link{Delay: 3 * time.Millisecond, Jitter: 2 * time.Millisecond}
	var sent []time.Time
	buffer := make([]byte, 1)
	for i := range 50 {
		buffer[0] = byte(i)
		now := time.Now()
		sent = append(sent, now)
		if err := line.Send(now, link, buffer); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	if !line.Drain(5 * time.Second) {
		t.Fatal("the line did not deliver everything in 5 s")
	}
	dst.mu.Lock()
	defer dst.mu.Unlock()
	for i, write := range dst.writes {
		if write[0] != byte(i) {
			t.Fatalf("write %d carries send %d", i, write[0])
		}
		// The earliest a send may arrive: its lowest sample.
		if early := sent[i].Add(link.Delay - link.Jitter); dst.at[i].Before(early) {
			t.Fatalf("send %d arrived %v after sending, before the lowest delay %v", i, dst.at[i].Sub(sent[i]), link.Delay-link.Jitter)
		}
	}
	if stats := line.Stats(); stats.Sends != 50 || stats.Delivered != 50 || stats.Bytes != 50 {
		t.Fatalf("stats %+v", stats)
	}
}

// TestLineRateCap: a shared pacer holds two lines to one bandwidth: 200 KB
// at 1 MB/s takes at least 200 ms.
func TestLineRateCap(t *testing.T) {
	t.Parallel()
	pacer := &Pacer{}
	first, second := &recorder{}, &recorder{}
	lines := []*Line{NewLine(first, pacer, 1, nil), NewLine(second, pacer, 2, nil)}
	link := Link{Rate: 1_000_000}
	start := time.Now()
	chunk := make([]byte, 10_000)
	for i := range 20 {
		if err := lines[i%2].Send(time.Now(), link, chunk); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range lines {
		if !line.Drain(5 * time.Second) {
			t.Fatal("not delivered in 5 s")
		}
		line.Close()
	}
	if elapsed := time.Since(start); elapsed < 200*time.Millisecond-time.Millisecond {
		t.Fatalf("200 KB at 1 MB/s took %v", elapsed)
	}
	if first.count()+second.count() != 20 {
		t.Fatalf("%d + %d writes", first.count(), second.count())
	}
}

// TestLineLossIsDeterministic: the same seed loses the same sends, and a
// lost send holds back those behind it.
func TestLineLossIsDeterministic(t *testing.T) {
	t.Parallel()
	link := Link{Loss: 0.2, Retransmit: 5 * time.Millisecond}
	run := func() (lost []int, held bool) {
		dst := &recorder{}
		line := NewLine(dst, nil, 42, nil)
		defer line.Close()
		start := time.Now()
		for i := range 40 {
			before := line.Stats().Lost
			if err := line.Send(start, link, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			if line.Stats().Lost > before {
				lost = append(lost, i)
			}
		}
		if !line.Drain(5 * time.Second) {
			t.Fatal("not delivered")
		}
		dst.mu.Lock()
		defer dst.mu.Unlock()
		// Everything was sent at start: the first lost send and all after
		// it arrive no earlier than the retransmission.
		if len(lost) > 0 {
			held = !dst.at[len(dst.at)-1].Before(start.Add(link.Retransmit))
		}
		return lost, held
	}
	first, held := run()
	second, _ := run()
	if len(first) == 0 || len(first) == 40 || !slices.Equal(first, second) || !held {
		t.Fatalf("lost %v then %v (held %v)", first, second, held)
	}
}

// TestLineFailsAndCloses: a failed write closes the line, tells onFail,
// and Send then fails; Close drops what is queued.
func TestLineFailsAndCloses(t *testing.T) {
	t.Parallel()
	broken := errors.New("peer gone")
	failed := make(chan error, 1)
	line := NewLine(&recorder{fail: broken}, nil, 1, func(err error) { failed <- err })
	if err := line.Send(time.Now(), Link{}, []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		if !errors.Is(err, broken) {
			t.Fatalf("onFail got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("onFail not called")
	}
	if err := line.Send(time.Now(), Link{}, []byte("y")); !errors.Is(err, broken) {
		t.Fatalf("Send after a failed write: %v", err)
	}
	<-line.Done()

	dst := &recorder{}
	held := NewLine(dst, nil, 1, nil)
	if err := held.Send(time.Now(), Link{Delay: time.Hour}, []byte("z")); err != nil {
		t.Fatal(err)
	}
	held.Close()
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a closed line's goroutine did not end")
	}
	if dst.count() != 0 || held.Send(time.Now(), Link{}, []byte("w")) == nil {
		t.Fatal("a closed line delivered or accepted data")
	}
}

// TestLineBackPressure: a sender blocks once MaxQueued bytes wait.
func TestLineBackPressure(t *testing.T) {
	t.Parallel()
	line := NewLine(&recorder{}, nil, 1, nil)
	defer line.Close()
	slow := Link{Delay: time.Hour}
	if err := line.Send(time.Now(), slow, make([]byte, MaxQueued)); err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() { sent <- line.Send(time.Now(), slow, []byte("one more")) }()
	select {
	case err := <-sent:
		t.Fatalf("Send past MaxQueued returned at once (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	line.Close()
	if err := <-sent; !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked Send after Close: %v", err)
	}
}

func TestLinkAddAndString(t *testing.T) {
	sum := Link{Delay: time.Millisecond, Rate: 5000, Loss: 0.5}.Add(Link{Delay: 2 * time.Millisecond, Jitter: time.Millisecond, Distribution: Normal, Rate: 1000, Loss: 0.5})
	want := Link{Delay: 3 * time.Millisecond, Jitter: time.Millisecond, Distribution: Normal, Rate: 1000, Loss: 0.75}
	if sum != want {
		t.Fatalf("Add = %+v, want %+v", sum, want)
	}
	if got := sum.String(); got != "delay 3ms ±1ms normal, rate 1KB/s, loss 75% (retransmit 200ms)" {
		t.Fatalf("String = %q", got)
	}
}
