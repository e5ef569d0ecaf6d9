package broker

// clusterService is the broker as api.Cluster, the service package api's handlers see.
type clusterService struct{ b *Broker }
