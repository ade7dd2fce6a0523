// Package state is the cluster as a replay knows it at each point of an audit log: the objects
// the policies can read (params, namespaces, old objects), each known (its JSON), unknown (and
// why) or absent, from a snapshot and every write the log shows; the versions the latest writes
// replaced, so that a request the log records after a concurrent write can be decided on the
// version it read (State.PriorOf); the writes to params and namespaces that kube-apiserver's
// informers may not yet have held (State.RecentTyped); and Views (StateView), the copy-on-write
// snapshots of one point of the log that the evaluator reads on other goroutines while the
// replay's ordered stage moves the State on.
//
// The State is changed and read by the ordered stage alone; a View is read by the workers. It
// imports nothing of the replay: what a request did to the cluster (a write, a deletion, what
// a deletecollection listed) is applied by the replay through the State's methods.
package state
