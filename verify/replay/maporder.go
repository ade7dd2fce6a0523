package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// messageOrder is what the log holds of the values kube-apiserver gave the job's request's
// failure messages and audit annotations that may follow the order CEL iterated a map
// (verify.MessageOrder): the message of a denial by the result's policy and binding, which the
// response holds, the validation_failure annotation's entries of an Audit binding, and the
// audit annotations. The evaluator evaluates a decision again until its values are those (the
// order the server took), and does not claim them where the log does not hold them and they
// change.
func (j *job) messageOrder(dec *verify.Decision) verify.OrderAgreement {
	known, agrees := true, true
	annotations := j.ev.Annotations != nil || !j.ev.Loss.Any() // a GKE entry without labels lost them
	var logged []validationFailure
	if v := j.ev.Annotations[ValidationFailureAnnotation]; v != "" && json.Unmarshal([]byte(v), &logged) != nil {
		annotations = false
	}
	shown, named := j.shownDenial(dec), j.namedDenial(dec)
	for _, r := range dec.Results {
		if !r.MessageByChance {
			continue
		}
		if slices.Contains(r.Actions, admissionregistrationv1.Deny) {
			switch {
			case shown:
				// The response is the denial of one of the decision's results: the first the
				// server met, in an order no log records (verify.Decision.Denials). This
				// result's message is that one or not in the response.
			case named && (j.rec.policy != r.Policy || j.rec.binding != r.Binding):
				// Another binding's denial answered the request: this one's message is in no
				// response.
			case slices.Contains(r.Actions, admissionregistrationv1.Audit) && (j.ev.Loss.Lost.Has(auditlog.LostMessage) || j.rec.policy != r.Policy || j.rec.binding != r.Binding):
				// The response does not show this result's denial: a Deny and Audit
				// binding's message is its validation_failure entry's, which the Audit case
				// below asks for.
			case j.ev.Loss.Lost.Has(auditlog.LostMessage) || j.rec.policy != r.Policy || j.rec.binding != r.Binding:
				known = false // the response does not show this result's denial
			default:
				agrees = false
			}
		}
		if slices.Contains(r.Actions, admissionregistrationv1.Audit) {
			if !annotations || !j.auditShown(logged, r.Policy, r.Binding) {
				known = false
				continue
			}
			if !slices.ContainsFunc(logged, func(f validationFailure) bool {
				return f.Policy == r.Policy && f.Binding == r.Binding && r.ExpressionIndex != nil && f.ExpressionIndex == *r.ExpressionIndex && f.Message == r.Message
			}) {
				agrees = false
			}
		}
	}
	for _, pb := range byChanceBindings(dec) {
		k, a := j.outcomeOrder(dec, pb, annotations, logged)
		known, agrees = known && k, agrees && a
	}
	verdicts := agrees
	for _, k := range dec.AnnotationsByChance() {
		policy, _, _ := strings.Cut(k, "/")
		switch v, ok := j.ev.Annotations[k]; {
		case !annotations || (!ok && !j.ran[policy]):
			known = false // lost, or a policy the log does not show the server ran
		case !ok || v != dec.AuditAnnotations[k]:
			agrees = false
		}
	}
	return verify.OrderAgreement{Known: known, Agrees: agrees, Verdicts: verdicts}
}

// MapOrderWarningsNote is the note of a record whose response's warnings of a Warn binding,
// worded by a messageExpression that lists a map's keys in the order CEL iterated the map, or
// of one whose outcome follows that order where the verdict does not
// (verify.Decision.WarningsNotKnown), are left out: the server's order is Go's map order, and
// no log holds a response's warnings to say which it took (random parity seed c:662: "keys
// n,injected" against the replay's "keys injected,n").
const MapOrderWarningsNote = "the warnings of a Warn binding whose messageExpression, or whether it failed, follows the order CEL iterates a map's keys are not known, and left out: kube-apiserver's order is Go's map order, and no log holds the response's warnings"

// shownDenial says whether the response is one of the decision's refusals (verify.Decision.
// Denials: of each policy's binding and param the first denied decision, the server answering
// with the first it met), by the policy and binding the log names: the other refusals' messages
// are in no response.
func (j *job) shownDenial(dec *verify.Decision) bool {
	return j.rec.policy != "" && !j.ev.Loss.Lost.Has(auditlog.LostMessage) && dec.Refuses(j.ev.Code(), j.ev.Message())
}

// audits says whether the binding has the Audit action in the cluster: a given binding with it,
// which the log did not leave other than the given one (lifecycle's changed pairs, with which
// the server decided).
func (j *job) audits(pb policyBinding) bool {
	_, changed := j.given.changed[givenPair{givenKey{givenPolicy, pb.policy}, givenKey{givenBinding, pb.binding}}]
	return j.auditors[pb] && !changed
}

// namedDenial says whether the response is a denial by a binding the decision refuses with
// too, as the log names it: another binding's denial, which the server met after it, and
// another binding's outcome, are in no response, and no verdict turns on them (random parity
// seed r:1442: two Deny bindings of one policy, the response naming one).
func (j *job) namedDenial(dec *verify.Decision) bool {
	return !j.ev.Loss.Lost.Has(auditlog.LostMessage) && j.rec.policy != "" && slices.ContainsFunc(dec.Results, func(r verify.Result) bool {
		return r.Policy == j.rec.policy && r.Binding == j.rec.binding && slices.Contains(r.Actions, admissionregistrationv1.Deny)
	})
}

// auditShown says whether the event's validation_failure entries (logged) show the Audit
// binding's verdicts: it has some, or the log shows the policy installed, so that none is
// one.
func (j *job) auditShown(logged []validationFailure, policy, binding string) bool {
	return j.ran[policy] || slices.ContainsFunc(logged, func(f validationFailure) bool { return f.Policy == policy && f.Binding == binding })
}

// byChanceOf is why the failure messages of the first validating admission of vs whose
// messages follow map order are not known (verify.Decision.ByChance), or "".
func byChanceOf(vs []served) string {
	for _, v := range vs {
		for _, c := range v.calls {
			if c.dec != nil && c.dec.ByChance != "" {
				return c.dec.ByChance
			}
		}
	}
	return ""
}

// policyBinding names a binding of a policy.
type policyBinding struct{ policy, binding string }

// byChanceBindings are the policies' bindings whose results may have come out otherwise in
// another order of a map's keys (verify.Result.OutcomeByChance), in the results' order.
func byChanceBindings(dec *verify.Decision) []policyBinding {
	var out []policyBinding
	for _, r := range dec.Results {
		if pb := (policyBinding{r.Policy, r.Binding}); r.OutcomeByChance && !slices.Contains(out, pb) {
			out = append(out, pb)
		}
	}
	return out
}

// outcomeOrder is what the log holds of a binding's outcome (see messageOrder): whether its
// Deny action refused the request (the response: a denial by it, or a success), and its Audit
// action's validation_failure entries (annotations: whether the event holds its annotations).
func (j *job) outcomeOrder(dec *verify.Decision, pb policyBinding, annotations bool, logged []validationFailure) (known, agrees bool) {
	known, agrees = true, true
	var denial *verify.Result
	var failures []string
	for i, r := range dec.Results {
		if r.Policy != pb.policy || r.Binding != pb.binding || r.Result == "admit" {
			continue
		}
		if denial == nil && slices.Contains(r.Actions, admissionregistrationv1.Deny) {
			denial = &dec.Results[i]
		}
		if slices.Contains(r.Actions, admissionregistrationv1.Audit) && r.ExpressionIndex != nil {
			failures = append(failures, fmt.Sprintf("%d %s", *r.ExpressionIndex, r.Message))
		}
	}
	// Where the binding audits and validating admission ran (the log holds entries of the
	// binding, or the response shows admission ran), its validation_failure entries show its
	// outcome whatever the response shows (below).
	lost := j.ev.Loss.Lost.Has(auditlog.LostMessage)
	entries := slices.ContainsFunc(logged, func(f validationFailure) bool { return f.Policy == pb.policy && f.Binding == pb.binding })
	audited := j.audits(pb) && (j.rec.vapRan && !lost || entries)
	switch {
	case lost:
		known = audited
	case j.rec.policy == pb.policy && j.rec.binding == pb.binding:
		agrees = denial != nil && j.shownDenial(dec)
	case j.namedDenial(dec):
		// Another binding's denial answered the request: this one's outcome is in no
		// response (its validation_failure entries, below, show it where it audits).
	case j.ev.Code() >= 200 && j.ev.Code() < 300 && j.ran[pb.policy]:
		agrees = denial == nil
	default:
		// Refused by another, failed, or admitted where the log does not show the server
		// ran the policy: the response does not show this binding's outcome, but that it
		// refused nothing where admission ran and no policy refused.
		known = audited
		if j.rec.policy == "" && j.rec.vapRan {
			agrees = denial == nil
		}
	}
	if !j.auditors[pb] && !entries {
		// Without the Audit action the binding has no validation_failure entry to show or
		// hide its outcome (random parity seed r:1485: a Deny binding whose policy the log
		// does not show installed made every evaluation's order unknown, and the search
		// took the first, whose response was another binding's).
		return known, agrees
	}
	if !annotations || !j.auditShown(logged, pb.policy, pb.binding) {
		return false, agrees
	}
	var recorded []string
	for _, f := range logged {
		if f.Policy == pb.policy && f.Binding == pb.binding {
			recorded = append(recorded, fmt.Sprintf("%d %s", f.ExpressionIndex, f.Message))
		}
	}
	slices.Sort(recorded)
	slices.Sort(failures)
	return known, agrees && slices.Equal(recorded, failures)
}
