// Package api holds the broker's Kafka API handlers that are written over
// kmsg's typed requests and responses: the group, transaction, topic
// administration, configuration, ACL, credential and metadata APIs, one
// file per API.
//
// A handler sees a [Request] and nothing else: the connection's
// authorization ([Authorizer]), the listener it came in on, and the
// [Services], a few narrow interfaces the broker implements (groups,
// transactions, topics, cluster, administration, ACLs, credentials,
// metrics). It cannot reach the broker's state, its connections or its
// partitions except through them. Package api does not import package
// broker; broker imports api, decodes each request (kmsg), runs the
// handler registered here (see [Handlers]) and encodes the answer.
//
// Produce, Fetch, ApiVersions and the SASL APIs stay with the connection
// in package broker: Produce and Fetch work on the raw frame (the record
// bytes are appended and sent without decoding them into kmsg), and the
// others drive the connection's own state.
//
// Go errors become Kafka error codes in one place, package errcode.
//
// Concurrency: a handler runs in the connection's reader goroutine, or on
// its own goroutine when it registered as [Parks] (it waits for a
// rebalance, a transaction's markers). A Request is the connection's and
// is not changed while a handler runs; Services are safe for concurrent
// use.
package api
