package broker

// Coordinators in a cluster: the group and transaction coordinators and
// their internal topics are still local to each broker (they are not
// replicated and do not move with leadership). So that every client of a
// group or transactional id at least reaches the same one, FindCoordinator
// of a cluster member names the lowest-id unfenced broker of the last
// applied cluster view, the same answer on every broker that has applied
// that view. When that broker stops, the next one becomes the coordinator
// with none of its state.

// clusterCoordinator returns the cluster's coordinator broker, or false
// when replication is off or no view is applied yet.
func (b *Broker) clusterCoordinator() (coordinatorAnswer, bool) {
	if b.replication == nil {
		return coordinatorAnswer{}, false
	}
	view := b.replication.view.Load()
	if view == nil {
		return coordinatorAnswer{}, false
	}
	var best *ClusterBroker
	for i := range view.brokers {
		cb := &view.brokers[i]
		if !cb.Fenced && (best == nil || cb.ID < best.ID) {
			best = cb
		}
	}
	if best == nil {
		return coordinatorAnswer{}, false
	}
	return coordinatorAnswer{nodeID: best.ID, host: best.Host, port: best.Port}, true
}
