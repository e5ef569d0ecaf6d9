package broker

// aclService is the broker as api.ACLs, the service package api's handlers see.
type aclService struct{ b *Broker }
