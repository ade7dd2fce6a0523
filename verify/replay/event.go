package replay

import (
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// Event is an audit.k8s.io/v1 Event as a replay reads it (an Observer sees every final one):
// the fields a replay needs to classify a request decoded, the request and response objects
// kept as raw JSON.
type Event = auditlog.Event

// ObjectRef is the object an audited request is about.
type ObjectRef = auditlog.ObjectRef

// Status is the part of a response status (metav1.Status) a replay reads.
type Status = auditlog.Status

// DefaultMaxLineBytes is the longest log line a replay reads; longer lines are reported as
// malformed and skipped, and the rest of the file is replayed.
const DefaultMaxLineBytes = auditlog.DefaultMaxLineBytes

// receivedOf is when the request of ev was received, for the State: where its export lost that
// (GKE), the earliest it can have been, and when it completed, against which the State's
// reasons place the writes they name.
func receivedOf(ev *Event) state.Received {
	rc := state.ReceivedAt(ev.Received())
	if ev.Loss.Lost.Has(auditlog.LostReceived) {
		rc.Completed, rc.Lost = auditlog.ParseTime(ev.StageTimestamp), ev.Loss.Of(auditlog.LostReceived)
	}
	return rc
}
