package broker

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/exactly-eos/exactly/broker/share"
)

// Share sessions (KIP-932): like a fetch session, a share session is the
// set of partitions one member fetches from this broker, built by a
// ShareFetch at epoch 0 and changed by later ones (their topics added,
// their forgotten topics removed), each of which must carry the session's
// next epoch. Epoch -1 closes it: the member's acquired records on its
// partitions are released for others. A session also ends when its
// connection does, with the same release, so a crashed consumer's
// records come back as soon as its connection is gone rather than when
// their locks time out.

// shareSessionKey names a share session: one per member and broker.
type shareSessionKey struct {
	group, member string
}

// shareSession is one member's share session here. Its fields are guarded
// by shareManager.mu.
type shareSession struct {
	key shareSessionKey
	// epoch is the epoch the next request must carry.
	epoch      int32
	partitions map[sharePartitionKey]struct{}
}

// nextShareSessionEpoch is the epoch after epoch (wrapping to 1).
func nextShareSessionEpoch(epoch int32) int32 {
	if epoch == math.MaxInt32 {
		return 1
	}
	return epoch + 1
}

var (
	errShareSessionNotFound     = errors.New("share session not found")
	errInvalidShareSessionEpoch = errors.New("invalid share session epoch")
)

// shareSessionCode is the error code of a session refusal.
func shareSessionCode(err error) int16 {
	if errors.Is(err, errShareSessionNotFound) {
		return kerr.ShareSessionNotFound.Code
	}
	return kerr.InvalidShareSessionEpoch.Code
}

// openSession creates (epoch 0) the member's session over partitions,
// replacing an older one, and ends it when done (the connection's
// context) closes.
func (m *shareManager) openSession(key shareSessionKey, partitions []sharePartitionKey, done <-chan struct{}) *shareSession {
	session := &shareSession{key: key, epoch: 1, partitions: make(map[sharePartitionKey]struct{}, len(partitions))}
	for _, p := range partitions {
		session.partitions[p] = struct{}{}
	}
	m.mu.Lock()
	m.sessions[key] = session
	m.mu.Unlock()
	if done != nil {
		go func() {
			select {
			case <-done:
				m.closeSession(context.Background(), session)
			case <-m.b.ctx.Done():
			}
		}()
	}
	return session
}

// advanceSession checks an incremental request's epoch against the
// member's session and moves the session to the next one, adding and
// forgetting partitions.
func (m *shareManager) advanceSession(key shareSessionKey, epoch int32, add, forget []sharePartitionKey) (*shareSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	session := m.sessions[key]
	switch {
	case session == nil:
		return nil, errShareSessionNotFound
	case epoch != session.epoch:
		return nil, errInvalidShareSessionEpoch
	}
	session.epoch = nextShareSessionEpoch(epoch)
	for _, p := range add {
		session.partitions[p] = struct{}{}
	}
	for _, p := range forget {
		delete(session.partitions, p)
	}
	return session, nil
}

// isCurrent says whether session is still its member's open session here
// (not closed, not replaced by a newer one).
func (m *shareManager) isCurrent(session *shareSession) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[session.key] == session
}

// takeSession removes and returns the member's session (epoch -1).
func (m *shareManager) takeSession(key shareSessionKey) (*shareSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	session := m.sessions[key]
	if session == nil {
		return nil, errShareSessionNotFound
	}
	delete(m.sessions, key)
	return session, nil
}

// sessionPartitions lists a session's partitions.
func (m *shareManager) sessionPartitions(session *shareSession) []sharePartitionKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]sharePartitionKey, 0, len(session.partitions))
	for p := range session.partitions {
		out = append(out, p)
	}
	return out
}

// closeSession ends session if it is still the member's current one (a
// connection's end after a newer session replaced it releases nothing),
// releasing the member's acquired records on its partitions.
func (m *shareManager) closeSession(ctx context.Context, session *shareSession) {
	m.mu.Lock()
	if m.sessions[session.key] != session {
		m.mu.Unlock()
		return
	}
	delete(m.sessions, session.key)
	m.mu.Unlock()
	m.releaseMember(ctx, session)
}

// releaseMember releases the session member's acquired records on the
// session's partitions and persists the change.
func (m *shareManager) releaseMember(ctx context.Context, session *shareSession) {
	released := 0
	for _, key := range m.sessionPartitions(session) {
		m.mu.Lock()
		sp := m.partitions[key]
		m.mu.Unlock()
		if sp == nil {
			continue
		}
		sp.mu.Lock()
		if sp.state != nil {
			if n := sp.state.ReleaseMember(session.key.member); n > 0 {
				released += n
				m.b.countShare(shareReleased, n)
				_ = m.persist(ctx, sp) // a failed write drops the state; it reloads on next use
			}
		}
		sp.mu.Unlock()
	}
	if released > 0 {
		m.signalReleased()
	}
}

// ackTypes converts a request's acknowledge types, refusing values above
// maxType.
func ackTypes(raw []int8, maxType share.AckType) ([]share.AckType, bool) {
	out := make([]share.AckType, len(raw))
	for i, t := range raw {
		if t < 0 || share.AckType(t) > maxType {
			return nil, false
		}
		out[i] = share.AckType(t)
	}
	return out, true
}

// shareAckBatch is one acknowledgement batch of a request.
type shareAckBatch struct {
	first, last int64
	types       []int8
}

// acknowledge applies one partition's acknowledgement batches from member
// and persists the result; the error is the partition's first refusal
// (every batch is still tried).
func (m *shareManager) acknowledge(ctx context.Context, key sharePartitionKey, tp *topicPartition, member string, batches []shareAckBatch, maxType share.AckType) error {
	sp := m.partition(key)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := m.load(ctx, sp, tp); err != nil {
		return err
	}
	now := time.Now()
	var first error
	changed, released := false, false
	for _, batch := range batches {
		types, ok := ackTypes(batch.types, maxType)
		if !ok {
			first = cmpFirst(first, share.ErrInvalidRequest)
			continue
		}
		counts, err := sp.state.Acknowledge(now, member, share.AckRange{First: batch.first, Last: batch.last, Types: types})
		if err != nil {
			first = cmpFirst(first, err)
			continue
		}
		changed = true
		released = released || counts.Released > 0
		m.b.countShareAcks(counts)
	}
	if changed {
		if err := m.persist(ctx, sp); err != nil {
			return err
		}
	}
	if released {
		m.signalReleased()
	}
	return first
}

func cmpFirst(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
