package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/errtext"
)

// preflightTimeout bounds each step of Preflight: reaching the cluster,
// and creating and deleting its probe topic (a variable for tests).
var preflightTimeout = 5 * time.Second

// PreflightTopicPrefix starts the name of the probe topic Preflight
// creates and deletes; a random hex suffix follows.
const PreflightTopicPrefix = "exactly.preflight."

// Preflight checks, before any run, the two things a new user's first
// invocation most often gets wrong, so that they fail once, in one line,
// instead of once per run: that a Kafka broker answers at the target's
// bootstrap addresses, and that the cluster lets this client create (and
// delete) a topic with the workload's partitions and replication factor —
// it creates a probe topic named PreflightTopicPrefix plus random hex, then
// deletes it (best effort). A workload on the consumer group protocol
// also needs the cluster to serve it (ConsumerGroupHeartbeat v1). Each
// step is bounded by a few seconds.
//
// The error is one line naming the problem and its fix, meant to be
// printed as is; nil means the runs can start.
func Preflight(ctx context.Context, target Target, workload Workload) error {
	addresses := strings.Join(target.Bootstrap(), ",")
	security := TargetSecurity(target)
	dials := &dialRecorder{security: security}
	// kgo takes a Dialer or DialTLSConfig, not both: the recorder does the
	// TLS handshake itself, so only the SASL options are added here.
	client, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(target.Bootstrap()...), kgo.ClientID("exactly-loadgen-preflight"),
		kgo.Dialer(dials.dial), kgo.RetryTimeout(preflightTimeout)}, security.SASLOptions()...)...)
	if err != nil {
		return fmt.Errorf("kafka client for %s: %w", addresses, err)
	}
	defer client.Close()
	brokers, err := clusterBrokers(ctx, client)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("preflight of %s: %w", addresses, ctx.Err())
		}
		if refused := securityError(target, security, dials, err); refused != nil {
			return refused
		}
		return unreachableError(target, dials.cause(err))
	}
	if wantsConsumerProtocol(workload) {
		if err := checkConsumerProtocol(ctx, client, clusterName(target)); err != nil {
			return err
		}
	}
	return probeTopicCreation(ctx, client, dials, target, workload, brokers)
}

// clusterBrokers asks any seed broker for metadata (no topics) and returns
// how many brokers the cluster has.
func clusterBrokers(ctx context.Context, client *kgo.Client) (int, error) {
	metadataCtx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	request := kmsg.NewPtrMetadataRequest()
	request.Topics = []kmsg.MetadataRequestTopic{} // none: only the brokers
	response, err := request.RequestWith(metadataCtx, client)
	if err != nil {
		return 0, err
	}
	return len(response.Brokers), nil
}

// unreachableError is the one-line error for a target where no Kafka
// broker answers, with cause saying why.
func unreachableError(target Target, cause string) error {
	if target.Kind() != TargetBootstrap {
		return fmt.Errorf("%s does not answer (%s): this is a bug in exactly loadgen; use --bootstrap with a running cluster meanwhile",
			clusterName(target), cause)
	}
	return fmt.Errorf("no Kafka broker answers at %s (%s): start one (exactly broker --listen 127.0.0.1:9092) or point --bootstrap at a running cluster",
		strings.Join(target.Bootstrap(), ","), cause)
}

// probeTopicCreation creates a probe topic with the workload's partitions
// and replication factor, then deletes it. A refusal is returned as one
// line naming the Kafka error and the fix.
func probeTopicCreation(ctx context.Context, client *kgo.Client, dials *dialRecorder, target Target, workload Workload, brokers int) error {
	topic := fmt.Sprintf("%s%016x", PreflightTopicPrefix, rand.Uint64())
	probeCtx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	request := kmsg.NewPtrCreateTopicsRequest()
	request.TimeoutMillis = int32(preflightTimeout / time.Millisecond)
	requestTopic := kmsg.NewCreateTopicsRequestTopic()
	requestTopic.Topic = topic
	requestTopic.NumPartitions = int32(workload.Partitions)
	requestTopic.ReplicationFactor = int16(workload.ReplicationFactor)
	request.Topics = append(request.Topics, requestTopic)
	response, err := request.RequestWith(probeCtx, client)
	cluster := clusterName(target)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("preflight of %s: %w", cluster, ctx.Err())
		}
		if host, dialErr := dials.failed(); dialErr != nil && (errtext.NetworkCause(err) != "" || errtext.IsTimeout(err)) {
			// The seed answered, but the controller it advertises does not:
			// the usual advertised.listeners mistake.
			return fmt.Errorf("%s answered, but the broker it advertises at %s does not (%s): make the brokers' advertised.listeners reachable from this machine",
				cluster, host, errtext.NetworkCause(dialErr))
		}
		return fmt.Errorf("%s did not create topic %s (%s): the load generator needs to create and delete its own topics named exactly.<run id>.*",
			cluster, topic, errtext.OneLine(errorCause(err, true)))
	}
	var refusal error
	for _, created := range response.Topics {
		// TOPIC_ALREADY_EXISTS for a random name means a retried request
		// found the topic its first attempt created.
		if err := kerr.ErrorForCode(created.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			message := ""
			if created.ErrorMessage != nil {
				message = errtext.OneLine(*created.ErrorMessage)
			}
			refusal = refusedError(cluster, topic, workload, brokers, err, message)
		}
	}
	if refusal == nil && len(response.Topics) == 0 {
		refusal = fmt.Errorf("%s did not answer for topic %s in CreateTopics: the load generator needs a cluster that creates topics", cluster, topic)
	}
	if refusal == nil {
		// Best effort: a failed delete leaves a small empty topic behind,
		// and the runs' own deletes are best effort too.
		deleteCtx, cancelDelete := context.WithTimeout(ctx, preflightTimeout)
		_ = deleteTopics(deleteCtx, client, topic)
		cancelDelete()
	}
	return refusal
}

// clusterName names the target in errors: "the cluster at host:port" for
// an existing cluster, "the embedded broker at …" or "kfake at …" for one
// the load generator started.
func clusterName(target Target) string {
	addresses := strings.Join(target.Bootstrap(), ",")
	switch target.Kind() {
	case TargetEmbedded:
		return "the embedded broker at " + addresses
	case TargetKfake:
		return "kfake at " + addresses
	}
	return "the cluster at " + addresses
}

// refusedError is the one-line error for a CreateTopics refusal: the
// Kafka error's name, what it means here, and the fix.
func refusedError(cluster, topic string, workload Workload, brokers int, err error, message string) error {
	name := err.Error()
	var kafkaErr *kerr.Error
	if errors.As(err, &kafkaErr) {
		name = kafkaErr.Message
	}
	prefix := fmt.Sprintf("%s refused to create topic %s: %s", cluster, topic, name)
	detail := ""
	if message != "" {
		detail = " (" + message + ")"
	}
	var fix string
	switch {
	case errors.Is(err, kerr.InvalidReplicationFactor) && brokers > 0 && workload.ReplicationFactor > brokers:
		fix = fmt.Sprintf(" (replication factor %d is more than its %s); use --replication-factor %d or fewer",
			workload.ReplicationFactor, plural(brokers, "broker"), brokers)
	case errors.Is(err, kerr.InvalidReplicationFactor):
		fix = fmt.Sprintf("%s; use a --replication-factor the cluster accepts (%d was asked)", detail, workload.ReplicationFactor)
	case errors.Is(err, kerr.InvalidPartitions):
		fix = fmt.Sprintf("%s; use a --partitions the cluster accepts (%d was asked)", detail, workload.Partitions)
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed):
		fix = fmt.Sprintf("%s; grant this client CreateTopics and DeleteTopics (ACL operations CREATE and DELETE) on topics prefixed exactly.", detail)
	default:
		fix = fmt.Sprintf("%s; the load generator needs to create and delete its own topics named exactly.<run id>.*", detail)
	}
	return &preflightError{text: prefix + fix, err: err}
}

// preflightError is a one-line message that keeps the Kafka error it
// reports for errors.Is.
type preflightError struct {
	text string
	err  error
}

func (e *preflightError) Error() string { return e.text }
func (e *preflightError) Unwrap() error { return e.err }

// plural writes "1 broker" or "3 brokers".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// dialRecorder dials for the preflight client and remembers the last dial
// error and whether any connection was accepted, so a timeout can say
// whether the address did not accept or accepted and never answered.
type dialRecorder struct {
	// security, when it has TLS, makes dial a TLS dial: the handshake runs
	// here, so that its failure is told apart from a refused connection.
	security  *clientsec.Settings
	mu        sync.Mutex
	tlsErr    error // the last TLS handshake that failed
	connected bool
	lastErr   error
	lastHost  string // where lastErr was met
}

func (d *dialRecorder) dial(ctx context.Context, network, host string) (net.Conn, error) {
	dialer := net.Dialer{Timeout: preflightTimeout}
	conn, err := dialer.DialContext(ctx, network, host)
	d.mu.Lock()
	if err != nil {
		d.lastErr, d.lastHost = err, host
	} else {
		d.connected = true
	}
	d.mu.Unlock()
	config := d.security.TLSConfig(host)
	if err != nil || config == nil {
		return conn, err
	}
	secured := tls.Client(conn, config)
	handshakeCtx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	if err := secured.HandshakeContext(handshakeCtx); err != nil {
		conn.Close()
		d.mu.Lock()
		d.tlsErr, d.lastHost = err, host
		d.mu.Unlock()
		return nil, err
	}
	return secured, nil
}

// accepted reports whether any connection was accepted.
func (d *dialRecorder) accepted() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.connected
}

// tlsFailure returns the last failed TLS handshake (nil: none).
func (d *dialRecorder) tlsFailure() (host string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastHost, d.tlsErr
}

// failed returns the last dial that failed and its error (nil: none).
func (d *dialRecorder) failed() (host string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastHost, d.lastErr
}

// cause says tersely why the request failed with err.
func (d *dialRecorder) cause(err error) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.connected && d.lastErr != nil && errtext.IsTimeout(err) {
		err = d.lastErr // the context ended while dialing: say why
	}
	return errtext.OneLine(errorCause(err, d.connected))
}

// errorCause names a connection failure in a few words: connection
// refused, a DNS failure, a timeout, or a listener that is not Kafka.
// connected says whether a TCP connection was accepted.
func errorCause(err error, connected bool) string {
	var firstEOF *kgo.ErrFirstReadEOF
	if errors.As(err, &firstEOF) || (connected && errors.Is(err, syscall.ECONNRESET)) {
		return "it closed the connection at once: not a Kafka listener, or one that requires TLS or SASL"
	}
	if cause := errtext.NetworkCause(err); cause != "" {
		return cause
	}
	switch {
	case strings.Contains(err.Error(), "'HTTP'"):
		return "an HTTP server answered, not Kafka"
	case strings.Contains(err.Error(), "tls alert"):
		return "a TLS listener answered; this client speaks plaintext"
	case strings.Contains(err.Error(), "invalid large response size"):
		return "it answered, but not in the Kafka protocol"
	case errtext.IsTimeout(err) && connected:
		return fmt.Sprintf("it accepted the connection but gave no Kafka answer within %v", preflightTimeout)
	case errtext.IsTimeout(err):
		return fmt.Sprintf("timed out after %v", preflightTimeout)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "it closed the connection: not a Kafka listener?"
	}
	return err.Error()
}

// securityError is the one-line error for a cluster that answered but
// refused this client's security: a failed TLS handshake, a refused SASL
// mechanism, wrong credentials, or a listener that wants TLS or SASL the
// client does not speak. Nil when err is none of those.
func securityError(target Target, security *clientsec.Settings, dials *dialRecorder, err error) error {
	cluster := clusterName(target)
	using := security.Describe()
	if host, tlsErr := dials.tlsFailure(); tlsErr != nil {
		fix := "check --tls-ca (the CA that signed the broker's certificate) and --tls-server-name (the name in it)"
		var record tls.RecordHeaderError
		if errors.As(tlsErr, &record) {
			fix = "the listener does not speak TLS: use --security-protocol PLAINTEXT or SASL_PLAINTEXT, or the broker's SSL listener"
		}
		return &preflightError{text: fmt.Sprintf("TLS handshake with %s failed (%s): %s", host, errtext.OneLine(tlsErr.Error()), fix), err: tlsErr}
	}
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return &preflightError{text: fmt.Sprintf("%s refused the credentials (%s: %s): check --sasl-username and --sasl-password",
			cluster, using, errtext.OneLine(err.Error())), err: err}
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return &preflightError{text: fmt.Sprintf("%s does not accept SASL mechanism %s (%s): use one its sasl.enabled.mechanisms lists",
			cluster, security.Config().Mechanism, errtext.OneLine(err.Error())), err: err}
	case errors.Is(err, kerr.IllegalSaslState):
		return &preflightError{text: fmt.Sprintf("%s did not expect SASL (%s): its listener is not a SASL listener; check --security-protocol",
			cluster, errtext.OneLine(err.Error())), err: err}
	}
	var firstEOF *kgo.ErrFirstReadEOF
	closed := errors.As(err, &firstEOF) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
	if closed && dials.accepted() {
		if security.Config().SASL() {
			// Kafka answers wrong credentials with SASL_AUTHENTICATION_FAILED
			// and then closes; kfake and some proxies only close.
			return &preflightError{text: fmt.Sprintf("%s closed the connection during SASL authentication (%s): wrong credentials, "+
				"or a listener that is not SASL; check --sasl-username, --sasl-password and --security-protocol", cluster, using), err: err}
		}
		if security.Config().TLS() {
			return &preflightError{text: fmt.Sprintf("%s closed the TLS connection at once (%s): the listener may require SASL "+
				"(--security-protocol SASL_SSL) or a client certificate (--tls-cert, --tls-key)", cluster, using), err: err}
		}
	}
	return nil
}
