package verify

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
)

// kube-apiserver's CEL iterates the maps of an object and of a param in Go's map order, which
// changes from one evaluation to the next: an expression whose value lists a map's keys in
// that order (vapc check's lint, cel.MapOrderMessage) has one of several values by chance.
// WithMapOrder names them; this file is what the Evaluator does about it.

// MapOrderTries is how many times the Evaluator evaluates again a decision whose failure
// messages, audit annotations or outcome may follow map order (Result.MessageByChance,
// Decision.AnnotationsByChance, Result.OutcomeByChance) to see them change, where the caller
// does not know the server's (WithMessageOrder). Go iterates a map of up to eight keys from a
// random one of its eight slots round: two keys come in the order other than their slots' in
// one evaluation of eight; a larger map from a random slot of a larger table (16 slots for up
// to 14 keys: a node's labels), an order one evaluation in 16. 256 evaluations miss the
// latter with a chance of 7 in 100 million (random parity seed c:846: two node-controller
// updates of a node's status, decided certain in one replay and map-order in the other, at
// 64, which miss it one time in 60).
const MapOrderTries = 256

// mapOrderSearches is how many times, at least, it evaluates again a decision whose such
// values the caller knows the server's of, to find that order: an order that comes one
// evaluation in eight is missed with a chance of 1 in 10^14. Each map iterates on its own (two
// policies, or two expressions, over the same labels): where the decision holds several such
// values, the server's may be a rare order of each, one evaluation in 8^n, and the search goes
// on eight times longer for each value beyond the first (TestMapOrderOtherRefusal missed the
// server's two rare orders of one in 64 one run in fifty at 256), to mapOrderSearchesMax, or
// until every combination of the values each took has come and none was the server's.
const mapOrderSearches = 256

// mapOrderSearchesMax bounds the search: three values each in its rare order (one evaluation
// in 512) are missed with a chance of 3 in 10,000.
const mapOrderSearchesMax = 4096

// mapOrderWhy is why an audit annotation WithMapOrder names is not known.
const mapOrderWhy = "its valueExpression lists a map's keys in the order CEL iterates the map, which in kube-apiserver is Go's map order and changes from one request to the next, and the server's is not known"

// byChance marks what of the decision WithMapOrder names: the audit annotations
// (AnnotationsByChance) and the results whose messages a messageExpression it names worded.
func (e *Evaluator) byChance(dec *Decision) {
	for _, policy := range slices.Sorted(maps.Keys(e.mapOrder.Annotations)) {
		for _, key := range e.mapOrder.Annotations[policy] {
			if _, ok := dec.AuditAnnotations[policy+"/"+key]; ok {
				dec.chanceKeys = append(dec.chanceKeys, policy+"/"+key)
			}
		}
	}
	for i := range dec.Results {
		r := &dec.Results[i]
		r.OutcomeByChance = e.mapOrder.Outcomes[r.Policy]
		if r.Result != "deny" || r.ExpressionIndex == nil || !slices.Contains(e.mapOrder.Messages[r.Policy], *r.ExpressionIndex) {
			continue
		}
		h := e.byName[r.Policy]
		if h == nil || *r.ExpressionIndex >= len(h.Policy.Spec.Validations) {
			continue
		}
		// kube-apiserver's fallbacks when the messageExpression gives no message (validator.go).
		v := h.Policy.Spec.Validations[*r.ExpressionIndex]
		if r.Message != strings.TrimSpace(v.Message) && r.Message != "failed expression: "+strings.TrimSpace(v.Expression) {
			r.MessageByChance = true
		}
	}
}

// AnnotationsByChance are the audit annotations ("<policy>/<key>") of the decision whose
// valueExpressions may list a map's keys in the order CEL iterated the map (WithMapOrder).
func (d *Decision) AnnotationsByChance() []string { return d.chanceKeys }

// MessagesByChance says whether the decision's response, refusals or audit annotations hold
// a message a messageExpression may have worded in the order CEL iterated a map
// (Result.MessageByChance): a failure of a Deny or Audit action. A Warn action's is only in
// the warnings.
func (d *Decision) MessagesByChance() bool {
	return slices.ContainsFunc(d.Results, func(r Result) bool { return r.MessageByChance && r.shown() })
}

// WarningsByChance are the warnings of the decision a messageExpression may have worded in the
// order CEL iterated a map (Result.MessageByChance): a failure of a Warn action, and neither
// Deny nor Audit, whose message is shown only as a warning, as kube-apiserver words it.
func (d *Decision) WarningsByChance() []string {
	var out []string
	for _, r := range d.Results {
		if r.MessageByChance && slices.Contains(r.Actions, admissionregistrationv1.Warn) && !r.shown() {
			out = append(out, WarningPrefix(r.Policy, r.Binding)+r.Message)
		}
	}
	return out
}

// WarningsNotKnown says whether the decision's warnings of a Warn binding may be others in
// another order of a map's keys: worded by a messageExpression that lists a map's keys
// (WarningsByChance), or of a binding whose outcome follows map order where the verdict does
// not (the decision has none of them).
func (d *Decision) WarningsNotKnown() bool {
	return d.quietWarnings || len(d.WarningsByChance()) > 0
}

// shown says whether the result's message is in the response or the audit annotations.
func (r Result) shown() bool {
	return slices.Contains(r.Actions, admissionregistrationv1.Deny) || slices.Contains(r.Actions, admissionregistrationv1.Audit)
}

// byChanceMessages are the messages of the results MessagesByChance counts, in order.
func (d *Decision) byChanceMessages() []string {
	var out []string
	for _, r := range d.Results {
		if r.MessageByChance && r.shown() {
			out = append(out, r.Message)
		}
	}
	return out
}

// byChanceAnnotations are the values of the annotations AnnotationsByChance names, in order.
func (d *Decision) byChanceAnnotations() []string {
	var out []string
	for _, k := range d.chanceKeys {
		out = append(out, k+"="+d.AuditAnnotations[k])
	}
	return out
}

// outcomesByChance says whether a result's policy may have decided otherwise in another
// order of a map's keys (Result.OutcomeByChance).
func (d *Decision) outcomesByChance() bool {
	return slices.ContainsFunc(d.Results, func(r Result) bool { return r.OutcomeByChance })
}

// byChanceOutcomes are whether the response refuses and what the results Result.OutcomeByChance
// marks decided (their messages aside: byChanceMessages), to compare two evaluations.
func (d *Decision) byChanceOutcomes() []string {
	if !d.outcomesByChance() {
		return nil
	}
	out := []string{fmt.Sprintf("%v %d", d.Allowed, d.Code)} // the messages are byChanceMessages'
	for _, r := range d.Results {
		if r.OutcomeByChance {
			out = append(out, r.outcome())
		}
	}
	return out
}

// outcome is what the result decided, by whom: its binding and param, its result and the
// expression that gave it, to compare two evaluations by.
func (r Result) outcome() string {
	return fmt.Sprintf("%s %s %v %s %s", r.Policy, r.Binding, r.Param, r.Result, indexOf(r))
}

// byChanceFailed says whether a result whose outcome may follow map order
// (Result.OutcomeByChance) failed.
func (d *Decision) byChanceFailed() bool {
	return slices.ContainsFunc(d.Results, func(r Result) bool { return r.OutcomeByChance && r.Result != ResultAdmit })
}

// chanceBindings are the bindings of the policies whose outcomes may follow map order
// (Result.OutcomeByChance) in dec's results, and the actions they have: a failure of one in
// another order of a map's keys may refuse the request (deny; or a binding not found), warn,
// or be listed in the validation_failure annotation (audits). A result that admits carries no
// actions (Result.Actions): the bindings' are the evaluator's.
type chanceBindings struct {
	names              []string
	deny, warn, audits bool
}

func (e *Evaluator) byChanceBindings(dec *Decision) chanceBindings {
	var out chanceBindings
	for _, r := range dec.Results {
		if !r.OutcomeByChance {
			continue
		}
		if name := fmt.Sprintf("%s (binding %s)", r.Policy, r.Binding); !slices.Contains(out.names, name) {
			out.names = append(out.names, name)
		}
		actions := e.bindingActions(r.Policy, r.Binding)
		out.deny = out.deny || actions == nil || slices.Contains(actions, admissionregistrationv1.Deny)
		out.warn = out.warn || slices.Contains(actions, admissionregistrationv1.Warn)
		out.audits = out.audits || slices.Contains(actions, admissionregistrationv1.Audit)
	}
	return out
}

// ValidationFailureAnnotation is the audit annotation kube-apiserver lists an Audit binding's
// failures in (publishValidationFailureAnnotations).
const ValidationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

// withoutQuietOutcomes is d, an evaluation where none of the bindings whose outcomes follow
// map order (b) failed, where none of them has the Deny action and the verdict is the same in
// every order: the validation_failure annotation, which may list their failures, is not
// claimed, nor are their warnings (WarningsNotKnown), and a note says so.
func (d *Decision) withoutQuietOutcomes(b chanceBindings) *Decision {
	why := "a validation or a matchCondition of " + strings.Join(b.names, ", ") + " lists a map's keys in the order CEL iterated the map, which in kube-apiserver is Go's map order and changes from one request to the next, and whether it failed changes with it: the server's is not known"
	if b.audits {
		d.Forget(ValidationFailureAnnotation, why)
	}
	d.quietWarnings = b.warn
	d.Notes = append(slices.Clip(d.Notes), "the verdict is the same in every order of a map's keys; "+why+", and its warnings and validation_failure entries, which do not refuse the request, are not claimed")
	return d
}

// messagesDeny says whether a result whose message may follow map order (MessageByChance)
// is of a binding with the Deny action, or may be (its binding not found): its message may
// be the response's.
func (e *Evaluator) messagesDeny(dec *Decision) bool {
	return slices.ContainsFunc(dec.Results, func(r Result) bool {
		if !r.MessageByChance {
			return false
		}
		actions := e.bindingActions(r.Policy, r.Binding)
		return actions == nil || slices.Contains(actions, admissionregistrationv1.Deny)
	})
}

// bindingActions are the validationActions of the policy's binding, nil when the evaluator
// has no such binding.
func (e *Evaluator) bindingActions(policy, binding string) []admissionregistrationv1.ValidationAction {
	if h := e.byName[policy]; h != nil {
		if i := slices.IndexFunc(h.Bindings, func(b *validating.PolicyBinding) bool { return b.Name == binding }); i >= 0 {
			return h.Bindings[i].Spec.ValidationActions
		}
	}
	return nil
}

// withoutQuietMessages is d, whose failures' messages that may follow map order (msgs; others
// in another order) are of bindings without the Deny action (messagesDeny): those messages,
// the warnings of those bindings and the validation_failure annotation are not claimed, and a
// note says so.
func (d *Decision) withoutQuietMessages(msgs, others []string) *Decision {
	why := "a failure's message lists a map's keys in the order CEL iterated the map, which in kube-apiserver is Go's map order and changes from one request to the next (" + strings.Join(quoteAll(msgs), ", ") + " or " + strings.Join(quoteAll(others), ", ") + "), and the server's is not known"
	results := slices.Clone(d.Results)
	var prefixes []string
	audits := false
	for i, r := range results {
		if !r.MessageByChance {
			continue
		}
		audits = audits || slices.Contains(r.Actions, admissionregistrationv1.Audit)
		if slices.Contains(r.Actions, admissionregistrationv1.Warn) {
			prefixes = append(prefixes, WarningPrefix(r.Policy, r.Binding))
		}
		results[i].Message = ""
	}
	d.Results = results
	if audits {
		d.Forget(ValidationFailureAnnotation, why)
	}
	if len(prefixes) > 0 {
		d.quietWarnings = true
		d.Warnings = slices.DeleteFunc(slices.Clone(d.Warnings), func(w string) bool {
			return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(w, p) })
		})
	}
	d.Notes = append(slices.Clip(d.Notes), "the verdict is the same in every order of a map's keys; "+why+": those messages, and their warnings and validation_failure entries, which do not refuse the request, are not claimed")
	return d
}

func indexOf(r Result) string {
	if r.ExpressionIndex == nil {
		return "-"
	}
	return strconv.Itoa(*r.ExpressionIndex)
}

// MessageOrder is what a caller knows of the values kube-apiserver gave a request's failure
// messages and audit annotations that may follow map order (Result.MessageByChance,
// Decision.AnnotationsByChance), as a recorded server's response and audit annotations hold
// them (see OrderAgreement).
type MessageOrder func(*Decision) OrderAgreement

// OrderAgreement is what a MessageOrder says of a decision's values that may follow map order.
type OrderAgreement struct {
	// Known says whether they can be compared with the server's, Agrees whether they are the
	// server's.
	Known, Agrees bool
	// Verdicts says whether its verdicts are the server's (the outcomes, the response's
	// message, the validation_failure entries) where some of the audit annotations that follow
	// map order are not: an order that gives the server's verdicts decides the request when
	// none gives those annotations too (they may differ for a reason the order is not, the
	// version of an object the server read), and those are then not claimed.
	Verdicts bool
}

type messageOrderKey struct{}

// WithMessageOrder returns ctx with what the caller knows of the server's values (see
// MessageOrder). The Evaluator evaluates a decision whose by-chance values are known to
// disagree again, up to MapOrderTries times, until they agree: the order kube-apiserver took.
// Without it, or where they are not known, it evaluates the decision again to see whether
// they change: failure messages that do are not known (Decision.ByChance), audit annotations
// that do are forgotten (Forget).
func WithMessageOrder(ctx context.Context, f MessageOrder) context.Context {
	return context.WithValue(ctx, messageOrderKey{}, f)
}

// inServerOrder settles dec, whose failure messages or audit annotations may follow map
// order, by evaluating the attributes again (see WithMessageOrder): it searches the orders
// (orderSearch.search), then settles the decision with what the search found (settle).
func (e *Evaluator) inServerOrder(ctx context.Context, attrs *recordingAttributes, o admission.ObjectInterfaces, dec *Decision) *Decision {
	order, _ := ctx.Value(messageOrderKey{}).(MessageOrder)
	var first OrderAgreement
	if order != nil {
		first = order(dec)
	}
	s := &orderSearch{e: e, ctx: ctx, attrs: attrs, o: o, dec: dec, known: first.Known}
	if first.Known && first.Agrees {
		return s.warnOnly(dec)
	}
	if s.known && first.Verdicts {
		s.verdicts = dec
	}
	if agreed := s.search(order); agreed != nil {
		return s.warnOnly(agreed)
	}
	return s.settle()
}

// warnOnly is d, an evaluation whose values that follow map order the caller knows to be the
// server's, where a binding whose outcome follows map order (Result.OutcomeByChance) has the
// Warn action and neither Deny nor Audit: no log shows whether it failed (a success shows that
// no Deny binding refused, a validation_failure entry is an Audit binding's, and its warning,
// the only trace of its failure, is in no log), and each map iterates on its own, so the other
// values' agreement says nothing of its order. Where its outcome changes in another order
// (MapOrderTries evaluations), its warnings are not claimed (WarningsNotKnown), with a note
// (random parity seed c:761: a Warn binding whose validation joins a ConfigMap's keys, claimed
// not to warn where the server's order warned).
func (s *orderSearch) warnOnly(d *Decision) *Decision {
	var names, prefixes []string
	for _, r := range d.Results {
		actions := s.e.bindingActions(r.Policy, r.Binding)
		if !r.OutcomeByChance || !slices.Contains(actions, admissionregistrationv1.Warn) ||
			slices.Contains(actions, admissionregistrationv1.Deny) || slices.Contains(actions, admissionregistrationv1.Audit) {
			continue
		}
		if p := WarningPrefix(r.Policy, r.Binding); !slices.Contains(prefixes, p) {
			prefixes = append(prefixes, p)
			names = append(names, fmt.Sprintf("%s (binding %s)", r.Policy, r.Binding))
		}
	}
	if len(prefixes) == 0 || d.quietWarnings {
		return d
	}
	outcomes := func(d *Decision) []string {
		var out []string
		for _, r := range d.Results {
			if slices.Contains(prefixes, WarningPrefix(r.Policy, r.Binding)) {
				out = append(out, r.outcome())
			}
		}
		return out
	}
	want, varies := outcomes(d), false
	for range MapOrderTries {
		again, err := s.again()
		if varies = err != nil || !slices.Equal(outcomes(again), want); varies {
			break
		}
	}
	if !varies {
		return d
	}
	d.quietWarnings = true
	d.Warnings = slices.DeleteFunc(slices.Clone(d.Warnings), func(w string) bool {
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(w, p) })
	})
	d.Notes = append(slices.Clip(d.Notes), "a validation or a matchCondition of "+strings.Join(names, ", ")+" lists a map's keys in the order CEL iterated the map, which in kube-apiserver is Go's map order and changes from one request to the next, and whether it failed changes with it; its binding only warns, and no log holds a warning: its warnings are not claimed")
	return d
}

// orderSearch is what evaluating a decision again in other map orders found.
type orderSearch struct {
	e     *Evaluator
	ctx   context.Context
	attrs *recordingAttributes
	o     admission.ObjectInterfaces
	dec   *Decision
	// known says the caller knows the server's values (MessageOrder).
	known bool

	// msgs, annotations and outcomes are dec's values that follow map order; otherMsgs the
	// first other messages an evaluation gave.
	msgs, annotations, outcomes []string
	otherMsgs                   []string
	// annotationsVary, outcomesVary and verdictVaries say whether an evaluation's audit
	// annotations that follow map order, outcomes, or response's verdict were not dec's.
	annotationsVary, outcomesVary, verdictVaries bool
	// verdicts is the first decision whose verdicts are the server's, where its annotations
	// that follow map order are not (OrderAgreement.Verdicts).
	verdicts *Decision
	// quiet is the first evaluation where no binding whose outcome follows map order failed,
	// for a decision whose verdict does not turn on them (withoutQuietOutcomes).
	quiet *Decision
}

// again evaluates the attributes once more, in another map order.
func (s *orderSearch) again() (*Decision, error) {
	return s.e.dispatch(s.ctx, &recordingAttributes{Attributes: s.attrs.Attributes, detached: true}, s.o)
}

// agreedNote is the note of a decision whose values that follow map order are the server's.
const agreedNote = "a failure's message or an audit annotation lists a map's keys in the order CEL iterated the map, which in kube-apiserver is Go's map order and changes from one request to the next: the decision's is the order the server took, which its recorded verdicts show"

// search evaluates the decision again, up to MapOrderTries times (or the budget of the
// combinations of the values that follow map order, where the server's are known), and notes
// what changed; it returns an evaluation that agrees with the server's values, when one does.
func (s *orderSearch) search(order MessageOrder) *Decision {
	dec := s.dec
	s.msgs, s.annotations, s.outcomes = dec.byChanceMessages(), dec.byChanceAnnotations(), dec.byChanceOutcomes()
	if !dec.byChanceFailed() {
		s.quiet = dec
	}
	tries := MapOrderTries
	var seen *combinations
	if s.known {
		seen = newCombinations(s.msgs, s.annotations, s.outcomes)
		tries = seen.budget()
	}
	for try := range tries {
		again, err := s.again()
		if err != nil {
			break
		}
		if s.known {
			a := order(again)
			if a.Agrees {
				again.Notes = append(again.Notes, agreedNote)
				return again
			}
			if a.Verdicts && s.verdicts == nil {
				s.verdicts = again
			}
			if seen.add(again.byChanceMessages(), again.byChanceAnnotations(), again.byChanceOutcomes()) && try+1 >= mapOrderSearches {
				break // every combination of the values each took has come, and none was the server's
			}
		}
		if !s.known && knownAgrees(order, again) {
			return again
		}
		if m := again.byChanceMessages(); s.otherMsgs == nil && !slices.Equal(s.msgs, m) {
			s.otherMsgs = m
		}
		s.annotationsVary = s.annotationsVary || !slices.Equal(s.annotations, again.byChanceAnnotations())
		s.outcomesVary = s.outcomesVary || !slices.Equal(s.outcomes, again.byChanceOutcomes())
		s.verdictVaries = s.verdictVaries || again.Allowed != dec.Allowed || again.Code != dec.Code
		if s.quiet == nil && !again.byChanceFailed() {
			s.quiet = again
		}
		if !s.known && (s.otherMsgs != nil || len(s.msgs) == 0) && (s.annotationsVary || len(s.annotations) == 0) && (s.outcomesVary || len(s.outcomes) == 0) {
			break // nothing more to learn
		}
	}
	if !s.known && order != nil {
		// What the search learnt stands (settle); an order the caller knows agrees is looked
		// for on its own.
		for range MapOrderTries {
			again, err := s.again()
			if err != nil {
				break
			}
			if knownAgrees(order, again) {
				return again
			}
		}
	}
	return nil
}

// knownAgrees says whether the caller knows the evaluation's values that follow map order and
// they are the server's, and notes so. Where the first evaluation's could not be compared (a
// binding's outcome the response does not show, another's denial not in it), another's may:
// one the caller knows agrees is the server's order as the known search's is (random parity
// seed r:1482, the response's binding refusing in one order in eight).
func knownAgrees(order MessageOrder, again *Decision) bool {
	if order == nil {
		return false
	}
	if a := order(again); !a.Known || !a.Agrees {
		return false
	}
	again.Notes = append(again.Notes, agreedNote)
	return true
}

// steady says whether the verdict stays dec's in MapOrderTries evaluations: the search may
// have stopped as soon as the values it looked at changed, before a verdict that an audit
// annotation's error in some order (failurePolicy Fail refuses whatever the binding's
// actions) would change.
func (s *orderSearch) steady() bool {
	for range MapOrderTries {
		again, err := s.again()
		if err != nil || again.Allowed != s.dec.Allowed || again.Code != s.dec.Code {
			return false
		}
	}
	return true
}

// settle is the decision what the search found gives: an order of the server's verdicts;
// one whose verdict does not turn on the order (withoutQuietOutcomes, withoutQuietMessages);
// or dec, with what follows map order forgotten or said to be by chance.
func (s *orderSearch) settle() *Decision {
	dec, known := s.dec, s.known
	if v := s.verdicts; v != nil {
		// No order gave the server's audit annotations that follow map order as well: the
		// decision is the order of the server's verdicts, without those.
		for _, k := range v.chanceKeys {
			v.Forget(k, mapOrderWhy)
		}
		v.Notes = append(v.Notes, "a validation or a failure's message lists a map's keys in the order CEL iterated the map, which in kube-apiserver is Go's map order and changes from one request to the next: the decision's is an order that gives the server's recorded verdicts, though not its audit annotations that follow map order, which are not claimed")
		return s.warnOnly(v)
	}
	if s.annotationsVary {
		for _, k := range dec.chanceKeys {
			dec.Forget(k, mapOrderWhy)
		}
	}
	if b := s.e.byChanceBindings(dec); s.outcomesVary && !known && !s.verdictVaries && s.otherMsgs == nil && s.quiet != nil && !b.deny && s.steady() {
		// Only bindings without the Deny action decided otherwise in another order: the
		// verdict is the same in every order; what they gave (a warning, a validation_failure
		// entry) is not known, and not claimed (random parity seed r:1462: a Warn and Audit
		// binding moments old, whose failure would have been only its warning and entry).
		if s.annotationsVary {
			for _, k := range s.quiet.chanceKeys {
				s.quiet.Forget(k, mapOrderWhy)
			}
		}
		return s.quiet.withoutQuietOutcomes(b)
	}
	if s.outcomesVary {
		dec.ByChance = "a validation or a matchCondition lists a map's keys in the order CEL iterated the map, which in kube-apiserver is Go's map order and changes from one request to the next, and the decision changes with it"
		if known {
			dec.ByChance += ": no order gives the server's verdicts"
		} else {
			dec.ByChance += ": the server's is not known"
		}
	}
	if s.otherMsgs != nil && !s.outcomesVary && !known && !s.e.messagesDeny(dec) && s.steady() {
		// Only failures without the Deny action are worded otherwise in another order: their
		// messages are only in warnings and validation_failure entries, which are then not
		// claimed; the verdict is the same in every order (its audit annotations that vary
		// are forgotten above).
		return dec.withoutQuietMessages(s.msgs, s.otherMsgs)
	}
	if s.otherMsgs != nil && !s.outcomesVary {
		dec.ByChance = "a failure's message lists a map's keys in the order CEL iterated the map, which in kube-apiserver is Go's map order and changes from one request to the next (" + strings.Join(quoteAll(s.msgs), ", ") + " or " + strings.Join(quoteAll(s.otherMsgs), ", ") + ")"
		if known {
			dec.ByChance += ", and no order gives the server's verdicts"
		} else {
			dec.ByChance += ", and the server's is not known"
		}
	}
	return dec
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// combinations are the values a decision's by-chance messages, audit annotations and outcomes
// took in the evaluations of a search for the server's order, each on its own and together.
type combinations struct {
	values int               // how many values may follow map order: each outcome, message and annotation
	each   []map[string]bool // the values of each
	joint  map[string]bool   // the combinations that came
	uneven bool              // an evaluation had another number of values: no count of combinations
}

func newCombinations(msgs, annotations, outcomes []string) *combinations {
	c := &combinations{joint: map[string]bool{}}
	c.add(msgs, annotations, outcomes)
	c.values = len(msgs) + len(annotations) + max(len(outcomes)-1, 0) // byChanceOutcomes: the response's, then each result's
	return c
}

// budget is how many times to evaluate again (mapOrderSearches).
func (c *combinations) budget() int {
	tries := mapOrderSearches
	for i := 1; i < c.values && tries < mapOrderSearchesMax; i++ {
		tries *= 8
	}
	return min(tries, mapOrderSearchesMax)
}

// add records an evaluation's values, and says whether every combination of the values each
// took has come.
func (c *combinations) add(msgs, annotations, outcomes []string) bool {
	// Each outcome is a value of its own: the results of a binding's params (or of several
	// bindings) follow map order each in its own evaluation of the expression, and the
	// server's may be a rare combination of them (all three params of a binding admitting
	// where each does one evaluation in eight: random parity seed r:233 with conditions that
	// follow map order), which a search that took their combinations as one value ended
	// before meeting, as soon as every value that value took had come.
	values := slices.Concat(msgs, annotations, outcomes)
	if c.each == nil {
		c.each = make([]map[string]bool, len(values))
		for i := range c.each {
			c.each[i] = map[string]bool{}
		}
	}
	if len(values) != len(c.each) {
		c.uneven = true
		return false
	}
	for i, v := range values {
		c.each[i][v] = true
	}
	c.joint[strings.Join(values, "\x01")] = true
	if c.uneven {
		return false
	}
	n := 1
	for _, vs := range c.each {
		n *= len(vs)
		if n > len(c.joint) {
			return false
		}
	}
	return n == len(c.joint)
}
