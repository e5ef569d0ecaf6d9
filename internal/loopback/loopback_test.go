package loopback

import (
	"net"
	"testing"
)

// TestFreeAddrsDistinctAndBindable: every address is new, on this
// process's host, and can be bound after it was handed out.
func TestFreeAddrsDistinctAndBindable(t *testing.T) {
	addrs, err := FreeAddrs(200)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, addr := range addrs {
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		h, _, err := net.SplitHostPort(addr)
		if err != nil || h != Host() {
			t.Fatalf("%s is not on host %s (%v)", addr, Host(), err)
		}
	}
	ln, err := net.Listen("tcp", addrs[len(addrs)-1])
	if err != nil {
		t.Fatalf("bind a handed-out address: %v", err)
	}
	ln.Close()
	if !net.ParseIP(Host()).IsLoopback() {
		t.Fatalf("host %s is not loopback", Host())
	}
}

func TestProcessHost(t *testing.T) {
	for _, tc := range []struct {
		pid  int
		want string
	}{
		{1, "127.100.0.1"},
		{4194303, "127.163.255.255"},
		{70000, "127.101.17.112"},
	} {
		if got := processHost(tc.pid); got != tc.want {
			t.Errorf("processHost(%d) = %s, want %s", tc.pid, got, tc.want)
		}
	}
}
