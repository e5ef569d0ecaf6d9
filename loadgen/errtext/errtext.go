// Package errtext renders failures as the short, one-line causes the
// load generator's first errors print (the preflight's, the application
// database's): a network failure in a few words, a timeout, a message
// folded onto one line.
package errtext

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
)

// NetworkCause names a failure to reach a server in a few words, or
// returns "" when err is not one: connection refused or reset, a DNS
// failure, an unreachable host or network, a dial that timed out.
func NetworkCause(err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dnsErr):
		switch {
		case dnsErr.IsNotFound:
			return "DNS: no such host " + dnsErr.Name
		case dnsErr.IsTimeout:
			return "DNS lookup of " + dnsErr.Name + " timed out"
		}
		return "DNS lookup of " + dnsErr.Name + " failed: " + dnsErr.Err
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &opErr) && opErr.Op == "dial" && opErr.Timeout():
		return "connection timed out"
	}
	return ""
}

// IsTimeout reports whether err is a deadline or a network timeout.
func IsTimeout(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}

// OneLine folds a message onto one line.
func OneLine(text string) string {
	return strings.Join(strings.Fields(text), " ")
}
