package broker

// adminService is the broker as api.Admin, the service package api's handlers see.
type adminService struct{ b *Broker }
