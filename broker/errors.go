package broker

import "github.com/exactly-eos/exactly/broker/errcode"

// The broker's handlers answer with the sentinels of package errcode, which
// maps every Go error to its Kafka error code in one table; these are its
// names inside package broker.
var (
	errUnknownTopic                 = errcode.ErrUnknownTopic
	errUnknownTopicID               = errcode.ErrUnknownTopicID
	errInvalidTopic                 = errcode.ErrInvalidTopic
	errInternalTopic                = errcode.ErrInternalTopic
	errTopicExists                  = errcode.ErrTopicExists
	errInvalidPartitions            = errcode.ErrInvalidPartitions
	errInvalidReplication           = errcode.ErrInvalidReplication
	errInvalidAssignment            = errcode.ErrInvalidAssignment
	errInvalidConfig                = errcode.ErrInvalidConfig
	errMessageTooLarge              = errcode.ErrMessageTooLarge
	errInvalidRecord                = errcode.ErrInvalidRecord
	errInvalidRequiredAcks          = errcode.ErrInvalidRequiredAcks
	errNotEnoughReplicas            = errcode.ErrNotEnoughReplicas
	errNotEnoughReplicasAfterAppend = errcode.ErrNotEnoughReplicasAfterAppend
	errNotLeader                    = errcode.ErrNotLeader
	errRequestTimedOut              = errcode.ErrRequestTimedOut
	errOffsetOutOfRange             = errcode.ErrOffsetOutOfRange
	errFencedLeaderEpoch            = errcode.ErrFencedLeaderEpoch
	errUnknownLeaderEpoch           = errcode.ErrUnknownLeaderEpoch
	errInvalidRequest               = errcode.ErrInvalidRequest
	errShuttingDown                 = errcode.ErrShuttingDown
	errStorage                      = errcode.ErrStorage
	errInvalidTxnState              = errcode.ErrInvalidTxnState
	errNoCoordinator                = errcode.ErrNoCoordinator
	errUnknownCoordinatorType       = errcode.ErrUnknownCoordinatorType
	errTopicAuthorization           = errcode.ErrTopicAuthorization
	errGroupAuthorization           = errcode.ErrGroupAuthorization
	errTransactionalIDAuthorization = errcode.ErrTransactionalIDAuthorization
	errClusterAuthorization         = errcode.ErrClusterAuthorization
	errSecurityDisabled             = errcode.ErrSecurityDisabled
)

// errorCode is [errcode.Of].
func errorCode(err error) int16 { return errcode.Of(err) }

// produceErrorCode is [errcode.Produce].
func produceErrorCode(err error, version int16) int16 { return errcode.Produce(err, version) }

// errorMessage is [errcode.Message].
func errorMessage(err error) *string { return errcode.Message(err) }
