package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/exactly-eos/exactly/broker/clusternode"
	"github.com/exactly-eos/exactly/internal/selfsigned"
	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/suite"
)

// securityListener is one protocol the security workload runs over: a
// target that connects with it, and how the broker sends fetched records
// over it (for the consume cost table; "" when not known).
type securityListener struct {
	protocol  string
	target    loadgen.Target
	fetchPath string
}

// securityUser is the SASL user the security workload's embedded broker
// is given (its password is random per run).
const securityUser = "exactly-loadgen"

// startSecurityListeners starts the security workload's broker and
// returns a listener per protocol, its parent target (for the results'
// header) and what stops it; a variable so that tests can run the
// workload against other listeners.
var startSecurityListeners = startEmbeddedSecurity

// startListeners is startSecurityListeners as the suite takes it
// ([suite.StartListeners]).
func startListeners(ctx context.Context, dataDir string, spec loadgen.SecuritySpec) ([]suite.Listener, loadgen.Target, func() error, error) {
	listeners, parent, stop, err := startSecurityListeners(ctx, dataDir, spec)
	if err != nil {
		return nil, nil, nil, err
	}
	out := make([]suite.Listener, len(listeners))
	for i, listener := range listeners {
		out[i] = suite.Listener{Protocol: listener.protocol, Target: listener.target, FetchPath: listener.fetchPath}
	}
	return out, parent, stop, nil
}

// startEmbeddedSecurity starts the embedded broker with a PLAINTEXT, an SSL
// and a SASL_SSL listener on free loopback ports: a certificate for
// 127.0.0.1 signed by a throw-away CA (internal/selfsigned) as its PEM
// keystore, and one user with a random password and a credential for
// mechanism. It returns a target per protocol of spec, in spec's order.
func startEmbeddedSecurity(ctx context.Context, dataDir string, spec loadgen.SecuritySpec) ([]securityListener, loadgen.Target, func() error, error) {
	dir, err := os.MkdirTemp("", "exactly-loadgen-security-*")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("security workload files: %w", err)
	}
	cleanup := func() error { return os.RemoveAll(dir) }
	files, password, usersFile, err := writeSecurityFiles(dir, spec.Mechanism)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	var listeners []string
	for _, protocol := range spec.Protocols {
		listeners = append(listeners, protocol+"://127.0.0.1:0")
	}
	target, err := startEmbeddedWith(ctx, dataDir, func(config *clusternode.Config) {
		config.Properties = map[string]string{
			"listeners":             strings.Join(listeners, ","),
			"ssl.keystore.type":     "PEM",
			"ssl.keystore.location": files.Keystore,
		}
		if spec.Mechanism != "" {
			config.Properties["sasl.enabled.mechanisms"] = spec.Mechanism
		}
		config.UsersFile = usersFile
	})
	if err != nil {
		cleanup()
		return nil, nil, nil, fmt.Errorf("the security workload needs the broker's listeners, TLS and SASL settings: %w", err)
	}
	stop := func() error { return errors.Join(target.Close(), cleanup()) }
	var out []securityListener
	for _, protocol := range spec.Protocols {
		address := target.member.Broker().ListenerAddr(protocol)
		if address == "" {
			stop()
			return nil, nil, nil, fmt.Errorf("the embedded broker has no %s listener", protocol)
		}
		config := clientsec.Config{Protocol: protocol}
		if config.TLS() {
			config.CAFile = files.CA
		}
		if config.SASL() {
			config.Mechanism, config.Username, config.Password = spec.Mechanism, securityUser, password
		}
		security, err := config.Resolve()
		if err != nil {
			stop()
			return nil, nil, nil, fmt.Errorf("%s listener: %w", protocol, err)
		}
		fetchPath := "sendfile"
		if config.TLS() {
			fetchPath = "copy (TLS)"
		}
		out = append(out, securityListener{protocol: protocol, target: loadgen.ListenerTarget(target, protocol, address, security), fetchPath: fetchPath})
	}
	return out, target, stop, nil
}

// writeSecurityFiles writes into dir the CA, the broker's keystore and a
// users file with securityUser and a random password, and returns them.
func writeSecurityFiles(dir, mechanism string) (files selfsigned.Files, password, usersFile string, err error) {
	ca, err := selfsigned.NewCA("exactly loadgen security workload CA")
	if err != nil {
		return files, "", "", err
	}
	leaf, err := ca.Sign("exactly-embedded-broker", "127.0.0.1", "localhost")
	if err != nil {
		return files, "", "", err
	}
	if files, err = ca.WriteFiles(dir, "broker", leaf); err != nil {
		return files, "", "", err
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return files, "", "", fmt.Errorf("security workload password: %w", err)
	}
	password = hex.EncodeToString(secret)
	type user struct {
		Name       string   `yaml:"name"`
		Password   string   `yaml:"password"`
		Mechanisms []string `yaml:"mechanisms"`
	}
	users := struct {
		Users []user `yaml:"users"`
	}{Users: []user{{Name: securityUser, Password: password, Mechanisms: []string{mechanism}}}}
	data, err := yaml.Marshal(users)
	if err != nil {
		return files, "", "", fmt.Errorf("security workload users file: %w", err)
	}
	usersFile = filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(usersFile, data, 0o600); err != nil {
		return files, "", "", fmt.Errorf("security workload users file: %w", err)
	}
	return files, password, usersFile, nil
}
