package loadgen

import (
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
)

// The tests name the registered modes through these (package modes holds
// them, one file each).
const (
	ModeAtMostOnce        = modes.AtMostOnce
	ModeAtMostOnceAcks1   = modes.AtMostOnceAcks1
	ModeAtLeastOnce       = modes.AtLeastOnce
	ModeIdempotent        = modes.Idempotent
	ModeTransactional     = modes.Transactional
	ModeEOSPipeline       = modes.EOSPipeline
	ModeSingleWriterCheck = modes.SingleWriterCheck
	ModeConsumerDedup     = modes.ConsumerDedup
	ModeExternalOffsets   = modes.ExternalOffsets
	// BaselineMode is the mode others are compared with.
	BaselineMode = modes.AtLeastOnce
)

var (
	// AllModes are the registered modes in the suite's order.
	AllModes = modes.Names()
	// ApplicationModes are the modes of the application's road.
	ApplicationModes = []string{ModeSingleWriterCheck, ModeConsumerDedup, ModeExternalOffsets}
	// GroupChurnModes are the modes the group-churn fault applies to.
	GroupChurnModes = modes.Accepting(faults.ClientGroupChurn)
)
