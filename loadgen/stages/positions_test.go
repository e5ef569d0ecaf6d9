package stages

import (
	"testing"
	"time"
)

func TestPositionsWaitForEveryPartition(t *testing.T) {
	p := NewPositions()
	ends := []int64{10, 5, 0}
	if p.WaitFor(ends, time.Now()) {
		t.Fatal("caught up before anything was processed")
	}
	p.Advance(0, 10)
	p.Advance(1, 4)
	p.Advance(1, 2) // a worker behind: no step back
	if partitions, records := p.Behind(ends); partitions != 1 || records != 1 {
		t.Fatalf("behind %d partitions, %d records; want 1, 1", partitions, records)
	}
	done := make(chan bool)
	go func() { done <- p.WaitFor(ends, time.Now().Add(10*time.Second)) }()
	p.Advance(1, 5)
	if !<-done {
		t.Fatal("WaitFor missed the last advance")
	}
}
