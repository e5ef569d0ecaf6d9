package broker

// topicService is the broker as api.Topics, the service package api's handlers see.
type topicService struct{ b *Broker }

// NameByID returns the name of the topic with the given id: a topic with a
// partition here, or any topic of the controller's view.
func (s topicService) NameByID(id [16]byte) (string, bool) {
	if t := s.b.topicByID(id); t != nil {
		return t.name, true
	}
	return s.b.clusterTopicByID(id)
}
