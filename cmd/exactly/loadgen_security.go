package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/exactly-eos/exactly/loadgen/clientsec"
)

// registerSecurityFlags registers the client security flags of `exactly
// loadgen` into config: Kafka's security.protocol, sasl.mechanism and
// the TLS trust and identity files, for a --bootstrap cluster.
func registerSecurityFlags(fs *flag.FlagSet, config *clientsec.Config) {
	fs.StringVar(&config.Protocol, "security-protocol", "", "how clients connect to the --bootstrap cluster, Kafka's security.protocol: "+
		"PLAINTEXT (default: no encryption, no login), SSL (TLS encryption), SASL_PLAINTEXT (a login, no encryption), "+
		"SASL_SSL (a login over TLS); applies to every client of the run (producers, consumers, admin, the preflight check)")
	fs.StringVar(&config.Mechanism, "sasl-mechanism", "", "how a SASL client logs in, Kafka's sasl.mechanism: "+strings.Join(clientsec.Mechanisms(), ", ")+
		" (PLAIN sends the password itself, so use it over SASL_SSL; SCRAM proves the password without sending it)")
	fs.StringVar(&config.Username, "sasl-username", "", "SASL user name")
	fs.StringVar(&config.Password, "sasl-password", "", "SASL password (default: the environment variable "+
		clientsec.PasswordEnv+", which other users cannot read in the process list as they can a flag)")
	fs.StringVar(&config.CAFile, "tls-ca", "", "PEM file of the certificate authorities that signed the brokers' certificates "+
		"(Kafka's ssl.truststore.location with ssl.truststore.type=PEM; default: the system's CAs)")
	fs.StringVar(&config.CertFile, "tls-cert", "", "PEM file of this client's certificate chain, for brokers that ask for one (ssl.client.auth); with --tls-key")
	fs.StringVar(&config.KeyFile, "tls-key", "", "PEM file of the private key of --tls-cert")
	fs.StringVar(&config.ServerName, "tls-server-name", "", "the name the brokers' certificates must carry (default: the host of each address dialed)")
	fs.BoolVar(&config.InsecureSkipVerify, "tls-insecure-skip-verify", false, "accept any broker certificate without checking it (for tests: anyone in the middle can read the traffic)")
}

// checkSecurityFlags reports inconsistent security flags before anything
// starts: settings that contradict each other, or security for a target
// the load generator starts itself (which listens on PLAINTEXT).
// A SASL protocol without --sasl-password takes the password from the
// environment (clientsec.PasswordEnv).
func checkSecurityFlags(flags *loadgenFlags) error {
	if flags.security.SASL() && flags.security.Password == "" {
		flags.security.Password = os.Getenv(clientsec.PasswordEnv)
	}
	if err := flags.security.Validate(); err != nil {
		return err
	}
	if flags.security.IsZero() {
		return nil
	}
	if flags.bootstrap == "" {
		return fmt.Errorf("--security-protocol %s is for an existing cluster: add --bootstrap host:port (the %s target listens on PLAINTEXT; "+
			"--workload security measures SSL and SASL_SSL on the embedded broker)", flags.security.Describe(), flags.target)
	}
	if flags.findMax.targets != "" {
		return errors.New("--security-protocol applies to --bootstrap, not to the targets of --targets")
	}
	return nil
}
