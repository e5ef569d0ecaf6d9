package group

import "time"

// Ticker is the coordinator's thin driver: a goroutine that moves the
// coordinator's time by calling Tick with the configured clock every
// Config.TickInterval. The coordinator itself runs no goroutine; tests
// leave the ticker out and call Tick with a fake clock instead.
type Ticker struct {
	stop chan struct{}
	done chan struct{}
}

// StartTicker starts ticking c. The ticker ends by itself when c is closed,
// or when Stop is called.
func StartTicker(c *Coordinator) *Ticker {
	t := &Ticker{stop: make(chan struct{}), done: make(chan struct{})}
	go t.run(c)
	return t
}

func (t *Ticker) run(c *Coordinator) {
	defer close(t.done)
	ticker := time.NewTicker(c.cfg.TickInterval)
	defer ticker.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-c.closing:
			return
		case <-ticker.C:
			c.Tick(c.cfg.Now())
		}
	}
}

// Stop ends the ticker and waits until it no longer calls Tick.
func (t *Ticker) Stop() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
}
