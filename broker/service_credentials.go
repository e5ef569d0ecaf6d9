package broker

// credentialService is the broker as api.Credentials, the service package api's handlers see.
type credentialService struct{ b *Broker }
