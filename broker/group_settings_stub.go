package broker

import "time"

// TEMPORARY until the group-configs branch lands.
type groupSettings struct {
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	ShareSessionTimeout, ShareHeartbeatInterval       time.Duration
	ShareRecordLockDuration                           time.Duration
	ShareAutoOffsetReset                              string
	ShareAutoOffsetResetDuration                      time.Duration
	ShareReadCommitted                                bool
	ShareDeliveryCountLimit                           int
}

func (b *Broker) groupSettings(groupID string) groupSettings {
	return groupSettings{ShareSessionTimeout: 45 * time.Second, ShareHeartbeatInterval: 5 * time.Second,
		ShareRecordLockDuration: 30 * time.Second, ShareAutoOffsetReset: "earliest", ShareDeliveryCountLimit: 5}
}
