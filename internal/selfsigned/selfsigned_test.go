package selfsigned

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
)

// TestLeafVerifiesAgainstCA: a leaf's chain loads as a TLS key pair and
// verifies against the CA for its host, and not for another host.
func TestLeafVerifiesAgainstCA(t *testing.T) {
	ca, err := NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Sign("broker", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("leaf does not verify for its IP: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.org"}); err == nil {
		t.Fatal("leaf verified for a host it was not made for")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: x509.NewCertPool(), DNSName: "localhost"}); err == nil {
		t.Fatal("leaf verified without its CA")
	}
}
