package auditlog

import (
	"strings"
	"time"
)

// Lost is a set of the parts of an audit event an export of the log does not carry: a
// managed cluster's logging service hands over its own envelope, made from the event and not
// always all of it (GKE's Cloud Logging entries keep the user's name but not their groups, for
// one). The event a reader rebuilds from such an envelope holds what the envelope gives, and
// Lost says what it could not: the replay holds those parts unknown, never the zero value the
// rebuilt event has in their place.
type Lost uint16

// The parts of an event an export may lose.
const (
	// LostGroups: the requesting user's groups (user.groups, impersonatedUser.groups), and
	// with them whether the user is a member of system:masters.
	LostGroups Lost = 1 << iota
	// LostUID: the requesting user's uid.
	LostUID
	// LostExtra: the requesting user's extra attributes.
	LostExtra
	// LostReceived: when the request was received (requestReceivedTimestamp).
	LostReceived
	// LostCode: the exact HTTP status code of the response (the event knows whether the
	// request succeeded, not always which code it got).
	LostCode
	// LostLevel: the audit level; the event's level is the lowest the objects it carries
	// allow (Metadata without objects, Request without a response object).
	LostLevel
	// LostQuery: the request URI's query (fieldManager, force, a deletecollection's
	// selectors, delete options given as parameters).
	LostQuery
	// LostDryRun: whether the request was a dry run (the query's dryRun), where the event
	// does not show it otherwise.
	LostDryRun
	// LostAnnotations: the event's annotations (the authorizer's decision, admission's
	// annotations: the log's verdicts of the request), and with them whatever followed the
	// request's objects (CloudWatch Logs cuts an event over its size limit).
	LostAnnotations
	// LostMessage: a failure's message (GKE's entry of a request logged without its response
	// gives the failure's reason only): what refused the request (a policy's denial names
	// itself) is not known from it.
	LostMessage
	// LostImpersonation: whether the request impersonated another user (impersonatedUser),
	// and so which user admission saw (AKS's Log Analytics tables have a column for the
	// authenticated user, none for the impersonated one): the whole of request.userInfo.
	LostImpersonation
	// LostStageTime: when the request completed, to the millisecond: the export gives a time
	// it completed in the second before (CloudWatch's timestamp of an event it cut, to the
	// second as aws logs tail --format short prints it, that second's last millisecond), the
	// event's stage time, the latest it can have completed.
	LostStageTime
	// LostObjects: the request's and the response's objects of an event the export split
	// over several records (Cloud Logging splits an audit entry over its size limit): the
	// event is replayed without them, as at level Metadata.
	LostObjects
)

// lostNames name each part in the order of the bits.
var lostNames = []string{"the user's groups", "the user's uid", "the user's extra attributes", "when the request was received", "the exact HTTP status code", "the audit level", "the request URI's query", "whether the request was a dry run", "the event's annotations (the verdicts of admission)", "the failure's message (what refused the request)", "whether the request impersonated another user (who admission saw as the requesting user)", "when the request completed, but within the second before the time it gives", "the objects of an entry it split over its size limit"}

// Has says whether every part of p is lost.
func (l Lost) Has(p Lost) bool { return l&p == p && p != 0 }

// String names the lost parts, as a list for people.
func (l Lost) String() string {
	var parts []string
	for i, n := range lostNames {
		if l&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ", ")
}

// Loss is what the export a line was read from lost of its event: Export names the export
// (for people: "GKE Cloud Logging"), Lost the parts. The zero Loss is a log backend's event,
// which lost nothing.
type Loss struct {
	Export string
	Lost   Lost
	// DryRunLabelled says the export labelled whether the request was a dry run (GKE's
	// command.gke.io/dryRun): an export that labels one labels every dry run from then on,
	// and the replay takes the entries after it without the label as no dry runs.
	DryRunLabelled bool
	// Structs says the export carries the request and response objects as protobuf Structs
	// (GKE's entries), whose numbers are doubles: not as kube-apiserver encoded them. The
	// other exports carry them byte for byte, or not at all.
	Structs bool
}

// Any says whether the export lost anything.
func (l Loss) Any() bool { return l.Lost != 0 }

// Of says what the export does not carry of the parts p, for people: "the GKE Cloud Logging
// export does not carry the user's groups".
func (l Loss) Of(p Lost) string {
	return "the " + l.Export + " export does not carry " + (l.Lost & p).String()
}

// MaxRequestDuration bounds how long before its response kube-apiserver received a request:
// its --request-timeout (one minute by default) ends every request that is not long-running.
// An event whose export lost when it was received was received no earlier than that.
const MaxRequestDuration = time.Minute

// receivedBound is the earliest the request of an event that lost its received time can have
// been received: MaxRequestDuration before its stage. Every window the replay opens at the
// received time (what ran concurrently with the request, what the informers may not have held
// yet) then opens as early as it can, so that the replay holds unknown whatever may have
// happened after the request was received, rather than what happened after a guess.
func (e *Event) receivedBound() time.Time {
	t := ParseTime(e.StageTimestamp)
	if t.IsZero() || e.longRunning() {
		// A long-running request (a watch, an exec) has no such bound: when it was received
		// is not known.
		return time.Time{}
	}
	return t.Add(-MaxRequestDuration)
}

// longRunning says whether kube-apiserver takes the request as long-running, which its
// --request-timeout does not end: its BasicLongRunningRequestCheck of the verbs watch and
// proxy and the subresources attach, exec, proxy, log and portforward.
func (e *Event) longRunning() bool {
	if e.Verb == "watch" || e.Verb == "proxy" {
		return true
	}
	if e.ObjectRef == nil {
		return false
	}
	switch e.ObjectRef.Subresource {
	case "attach", "exec", "proxy", "log", "portforward":
		return true
	}
	return false
}
