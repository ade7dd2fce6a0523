package replay

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/vapc-dev/vapc/verify"
)

// Certainty says how a replay knows the decision of a request (Record.Certainty). Its string is
// stable: JSON consumers and code switch on it.
type Certainty string

// The three kinds of outcome.
const (
	// CertaintyCertain: every state kube-apiserver could have been in decides alike.
	CertaintyCertain Certainty = "certain"
	// CertaintyLikely: decided on the state the log's order gives (kube-apiserver's informers
	// and watch cache current), where another state the server could have been in only
	// through a lag (an informer behind, the watch cache's first attempt, a write the log
	// records later that ran concurrently) decides otherwise, or cannot be decided: the
	// record's Alternatives say which, and what each needs.
	CertaintyLikely Certainty = "likely"
	// CertaintyIndeterminate: knowledge the log does not hold is missing (an object, a param,
	// a CRD, a patch's content type), or the server's choice has no likely side (the order of
	// MutatingAdmissionPolicies): Record.Reason says which.
	CertaintyIndeterminate Certainty = "indeterminate"
)

// Alternative is another outcome kube-apiserver may have given a request, and what it needs.
type Alternative struct {
	// Decision is admit, deny, or indeterminate when the replay cannot decide the request in
	// the state the alternative needs (Reason and Detail say why).
	Decision string `json:"decision"`
	// Code and Message are the refusal, for a denial.
	Code    int32  `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// AuditAnnotations and Warnings are those the alternative gives, where they are what
	// differs (kube-apiserver's first attempt on its watch cache's copy).
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	Warnings         []string          `json:"warnings,omitempty"`
	// Reason and Detail say why an indeterminate alternative is not decided.
	Reason Reason `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	// If is what the alternative needs: "the nodes informer had not yet held the write at
	// audit.log:12, completed 63ms before".
	If string `json:"if"`

	// refusal says the alternative is another refusal of the same decision (see
	// Record.otherRefusals).
	refusal bool
}

// String is the alternative in one line, for people.
func (a Alternative) String() string {
	out := a.Decision
	switch {
	case a.Decision == DecisionDeny && a.Message != "":
		out += fmt.Sprintf(" %d %q", a.Code, a.Message)
	case a.Decision == DecisionIndeterminate && a.Reason != "":
		out += " (" + string(a.Reason) + ": " + a.Detail + ")"
	}
	if len(a.AuditAnnotations) > 0 || len(a.Warnings) > 0 {
		out += fmt.Sprintf(" with audit annotations %v and warnings %q", a.AuditAnnotations, a.Warnings)
	}
	return out + " if " + a.If
}

// likely marks the record's decision as likely, with the alternatives it rests against.
func (r *Record) likely(alts ...Alternative) {
	if r.Decision == DecisionIndeterminate || len(alts) == 0 {
		return
	}
	r.Certainty = CertaintyLikely
	r.Alternatives = append(r.Alternatives, alts...)
}

// otherRefusals drops from the alternatives the refusal the record gives itself: the other
// refusals are alternatives, not the one chosen.
func (r *Record) otherRefusals() {
	r.Alternatives = slices.DeleteFunc(r.Alternatives, func(a Alternative) bool {
		return a.refusal && a.Code == r.Code && a.Message == r.Message
	})
	if len(r.Alternatives) == 0 {
		r.Alternatives = nil
	}
}

// sameOutcome says whether two decisions of a request answer it the same: the response (code,
// message, the refusals the apiserver may choose among, warnings) and the audit annotations,
// without the authorizer, whose answers the log does not hold. What a messageExpression or an
// annotation's valueExpression worded by listing a map's keys in the order CEL iterated the map
// is compared whatever that order (inOrderOfChance): two evaluations of one decision word it
// in the orders each took. Two refusals that may answer with one refusal answer alike (of
// several, the server answers with the first in its informers' order), the refusals each may
// give compared but those of a binding whose policy decides by a map's order
// (verify.Refusal.OutcomeByChance): which of them an evaluation gives is that order's chance.
func sameOutcome(a, b *verify.Decision) bool { return outcomeDiff(a, b) == "" }

// forgetUnknown forgets in each decision the audit annotations one of them does not know
// (verify.Decision.UnknownAnnotations), with the first one's why: decisions of one request
// (in the states kube-apiserver's informers may have held, or sent as each patch type) that
// differ in such an annotation differ in what the replay settled of each (a map order's
// search that found the server's order in one and not in another), not in what the server
// decided.
func forgetUnknown(decs []*verify.Decision) {
	if !slices.ContainsFunc(decs, func(d *verify.Decision) bool { return len(d.UnknownAnnotations) > 0 }) {
		return // (most requests: no map to make)
	}
	unknown := map[string]string{}
	for _, d := range decs {
		for k, why := range d.UnknownAnnotations {
			if _, ok := unknown[k]; !ok {
				unknown[k] = why
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(unknown)) {
		for _, d := range decs {
			d.Forget(k, unknown[k])
		}
	}
}

// outcomeDiff names what of the outcome of b differs from a's (see sameOutcome), for people:
// empty when nothing does.
func outcomeDiff(a, b *verify.Decision) string {
	ca, cb := inOrderOfChance(a), inOrderOfChance(b)
	// Of several refusals the server answers with the first it meets, in its informers' order
	// (verify.Decision.Denials): two that may answer with one refusal answer alike, the
	// refusals each may give compared below.
	shared := func() bool {
		return slices.ContainsFunc(a.Refusals(), func(x verify.Refusal) bool { return b.Refuses(x.Code, x.Message) })
	}
	switch {
	case a.Allowed != b.Allowed:
		return "the response"
	case (a.Code != b.Code || a.Reason != b.Reason || ca(a.Message) != cb(b.Message)) && !shared():
		// (Their codes and reasons too: two bindings' refusals may differ in them, random
		// parity seed r:1492's 413 and 422.)
		return "the response"
	case len(verify.Configured(b.Authorizer)) > 0:
		return "authorizer checks"
	case !sameMutation(a.Mutation, b.Mutation):
		return "the mutation"
	}
	sorted := func(d *verify.Decision, c func(string) string) ([]string, []string) {
		var ds []string
		for _, x := range d.Refusals() {
			if x.OutcomeByChance {
				// A refusal of a binding whose outcome is a map's order's chance: whether an
				// evaluation gives it, or another of the binding's, is that chance; the log
				// shows the one the server answered with, which the evaluations were chosen
				// to give where it does (verify.WithMessageOrder).
				continue
			}
			msg := x.Message
			if msg == d.Message {
				msg = c(msg) // the response, as compared above
			} else if x.ChanceWording != "" {
				// Whose refusal it is, not its wording where that is the map order's chance:
				// settled, or not claimed, apart (see verify.WithMessageOrder).
				msg = strings.TrimSuffix(msg, x.ChanceWording) + "(a map's order)"
			}
			ds = append(ds, fmt.Sprintf("%d %s %s", x.Code, x.Reason, msg))
		}
		var ws []string
		for _, w := range d.Warnings {
			ws = append(ws, c(w))
		}
		sort.Strings(ds)
		sort.Strings(ws)
		return ds, ws
	}
	ad, aw := sorted(a, ca)
	bd, bw := sorted(b, cb)
	switch {
	case strings.Join(ad, "\x00") != strings.Join(bd, "\x00"):
		return "the refusals"
	case strings.Join(aw, "\x00") != strings.Join(bw, "\x00"):
		return "the warnings"
	case len(a.AuditAnnotations) != len(b.AuditAnnotations):
		return "the audit annotations"
	}
	if !sameAnnotations(a.AuditAnnotations, b.AuditAnnotations, ca, cb, a, b) {
		return "the audit annotations"
	}
	return ""
}

// sameAnnotations says whether the audit annotations a and b are the same, their values as ca
// and cb give them (inOrderOfChance) and those of the keys an annotation's valueExpression of
// one of the decisions ds valued by a map's order (verify.Decision.AnnotationsByChance) in
// chanceForm.
func sameAnnotations(a, b map[string]string, ca, cb func(string) string, ds ...*verify.Decision) bool {
	if len(a) != len(b) {
		return false
	}
	byChance := func(k string) bool {
		return slices.ContainsFunc(ds, func(d *verify.Decision) bool { return slices.Contains(d.AnnotationsByChance(), k) })
	}
	for k, v := range a {
		w, ok := b[k]
		switch {
		case !ok:
			return false
		case byChance(k):
			if chanceForm(v) != chanceForm(w) {
				return false
			}
		case ca(v) != cb(w):
			return false
		}
	}
	return true
}

// inOrderOfChance returns what a text of the decisions ds (a response's message, a warning, an
// audit annotation's value, validation_failure's among them) is whatever order CEL iterated a
// map in: each message a messageExpression may have worded so (verify.Result.MessageByChance)
// in it, as is or as a JSON string holds it, replaced by the message's chanceForm.
func inOrderOfChance(ds ...*verify.Decision) func(string) string {
	var pairs []string
	for _, d := range ds {
		for _, r := range d.Results {
			if !r.MessageByChance || r.Message == "" {
				continue
			}
			f := chanceForm(r.Message)
			pairs = append(pairs, r.Message, f)
			if q, err := json.Marshal(r.Message); err == nil && string(q[1:len(q)-1]) != r.Message {
				pairs = append(pairs, string(q[1:len(q)-1]), f)
			}
		}
	}
	if len(pairs) == 0 {
		return func(s string) string { return s }
	}
	rep := strings.NewReplacer(pairs...)
	return rep.Replace
}

// chanceForm is a text whatever order the keys of a map it lists came in: its bytes sorted,
// which the keys (and what is between them) give alike in every order, and texts of other
// keys or values do not (but by a rare chance).
func chanceForm(s string) string {
	b := []byte(s)
	slices.Sort(b)
	return "(in a map's order: " + string(b) + ")"
}
