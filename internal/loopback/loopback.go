// Package loopback hands out free loopback addresses for brokers that are
// started later (a member that must be restarted on the same address, a
// voter list written before the voters run).
//
// Picking a port by listening on 127.0.0.1:0 and closing the listener
// races with every other process on the machine: between the close and
// the broker's own bind, another process's bind to 127.0.0.1:0 can be
// given the same port (CI runs the test packages in parallel, and one of
// them lost that race). So the addresses are on a loopback IP of this
// process's own — 127.x.y.z derived from the process id; the whole of
// 127.0.0.0/8 is the loopback interface on Linux — where no other process
// binds, and a port is never handed out twice within the process. Where
// that IP cannot be bound (macOS only answers on 127.0.0.1 by default) it
// falls back to 127.0.0.1 and the old, racy behaviour.
package loopback

import (
	"fmt"
	"net"
	"os"
	"sync"
)

var (
	hostOnce sync.Once
	host     string

	// handedOut is every port FreeAddr returned, so that a port closed
	// by one caller is not returned again to another (guarded by mu).
	mu        sync.Mutex
	handedOut = map[string]bool{}
)

// Host is this process's loopback host: an address in 127.0.0.0/8 that
// depends on the process id, or 127.0.0.1 where that cannot be bound.
func Host() string {
	hostOnce.Do(func() {
		host = "127.0.0.1"
		candidate := processHost(os.Getpid())
		if ln, err := net.Listen("tcp", net.JoinHostPort(candidate, "0")); err == nil {
			ln.Close()
			host = candidate
		}
	})
	return host
}

// processHost maps a process id to 127.(100+a).b.c. Process ids on Linux
// are below 2^22, so a is below 64 and the addresses never meet
// 127.0.0.0/16, where tests put fixed client and broker source addresses.
func processHost(pid int) string {
	return fmt.Sprintf("127.%d.%d.%d", 100+(pid>>16)&127, (pid>>8)&255, pid&255)
}

// FreeAddr returns host:port on Host() that nothing listens on now and
// that this process has not been given before.
func FreeAddr() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", net.JoinHostPort(Host(), "0"))
		if err != nil {
			return "", fmt.Errorf("find a free loopback port: %w", err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if handedOut[addr] {
			continue
		}
		handedOut[addr] = true
		return addr, nil
	}
	return "", fmt.Errorf("find a free loopback port: 100 tries all gave ports handed out before")
}

// FreeAddrs returns n distinct addresses from FreeAddr.
func FreeAddrs(n int) ([]string, error) {
	out := make([]string, 0, n)
	for range n {
		addr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		out = append(out, addr)
	}
	return out, nil
}
