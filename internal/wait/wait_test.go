package wait

import (
	"context"
	"testing"
	"time"
)

func TestUntilDeadlinePasses(t *testing.T) {
	start := time.Now()
	if !Until(context.Background(), start.Add(20*time.Millisecond)) {
		t.Fatal("Until reported a cancelled context that was never cancelled")
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("Until returned after %v, before its deadline", waited)
	}
}

func TestUntilContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Until(ctx, time.Now().Add(time.Hour)) {
		t.Fatal("Until waited out an hour's deadline on a cancelled context")
	}
}
