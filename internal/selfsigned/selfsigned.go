// Package selfsigned makes a throw-away certificate authority and
// certificates signed by it, as PEM, for tests and for the load
// generator's embedded broker when it measures TLS. Nothing here is
// meant for production certificates.
package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that signs leaf certificates.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertPEM is the CA certificate, PEM-encoded (a trust store).
	CertPEM []byte
}

// Leaf is a signed certificate with its private key.
type Leaf struct {
	// CertPEM is the certificate followed by the CA's (a chain).
	CertPEM []byte
	// KeyPEM is the private key, PKCS#8, PEM-encoded.
	KeyPEM []byte
}

// NewCA makes a CA valid for a day.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("selfsigned: CA key: %w", err)
	}
	template := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("selfsigned: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("selfsigned: CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Sign makes a leaf certificate for commonName, valid for a day, usable
// by servers and clients; hosts (IP addresses or DNS names) become its
// subject alternative names.
func (ca *CA) Sign(commonName string, hosts ...string) (*Leaf, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("selfsigned: key: %w", err)
	}
	template := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, host := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, host)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("selfsigned: certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("selfsigned: key: %w", err)
	}
	chain := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	chain = append(chain, ca.CertPEM...)
	return &Leaf{CertPEM: chain, KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}, nil
}

// Files are the PEM files WriteFiles wrote.
type Files struct {
	// CA is the CA certificate (a PEM trust store).
	CA string
	// Cert is the leaf's certificate chain.
	Cert string
	// Key is the leaf's private key.
	Key string
	// Keystore is key and chain in one file, the layout of Kafka's
	// ssl.keystore.type=PEM keystore file.
	Keystore string
}

// WriteFiles writes the CA certificate and the leaf's chain and key into
// dir as <name>-ca.pem, <name>-cert.pem, <name>-key.pem and
// <name>-keystore.pem.
func (ca *CA) WriteFiles(dir, name string, leaf *Leaf) (Files, error) {
	files := Files{
		CA:       filepath.Join(dir, name+"-ca.pem"),
		Cert:     filepath.Join(dir, name+"-cert.pem"),
		Key:      filepath.Join(dir, name+"-key.pem"),
		Keystore: filepath.Join(dir, name+"-keystore.pem"),
	}
	for path, content := range map[string][]byte{
		files.CA:       ca.CertPEM,
		files.Cert:     leaf.CertPEM,
		files.Key:      leaf.KeyPEM,
		files.Keystore: append(append([]byte{}, leaf.KeyPEM...), leaf.CertPEM...),
	} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			return Files{}, fmt.Errorf("selfsigned: %w", err)
		}
	}
	return files, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic("selfsigned: no randomness: " + err.Error())
	}
	return n
}
