// Package bench holds the `go test -bench` suites that compare the exactly
// broker with kfake (franz-go's in-memory fake Kafka) and with the client's
// own ceiling (kfake acknowledging and discarding every produce).
//
// Each server runs as a subprocess (the test binary re-executed, see
// startServer and serveChild) so its CPU time and resident memory are read
// from /proc/<pid> apart from the client's. The package has no non-test
// code; README.md says how to run each benchmark and holds the latest
// numbers.
package bench
