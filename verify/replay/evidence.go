package replay

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// --check-recorded uses the verdicts a log records as evidence of what the server did: which
// state it decided on (informers behind or current, the watch cache's first attempt), which way
// a patch was sent. The verdicts of a policy are evidence only where the log shows that very
// policy installed: the absence of a policy's annotation says nothing when the cluster does not
// run it (a replay of the in-tree guards over a log recorded with other guards).

// installed follows which of the replayed policies the log shows installed in the cluster, on
// the ordered stage: a policy whose successful create or update the log holds, with the create
// or update of one of its replayed bindings, or whose verdicts (a validation_failure entry, a
// `<policy>/<key>` audit annotation, a denial) the log records. A deletion of the policy ends
// it. Jobs hold the set of the moment (evidenced): it is replaced, never changed, when it
// changes.
type installed struct {
	// loaded are the replayed policies with bindings; bindingOf the policy of each replayed
	// binding.
	loaded    map[string]bool
	bindingOf map[string]string
	written   map[string]bool // the policies whose create or update the log holds
	bound     map[string]bool // the policies a binding of which the log creates or updates
	recorded  map[string]bool // the policies whose verdicts the log records
	evidenced map[string]bool
	// ever are the policies evidenced at some point of the log.
	ever map[string]bool
}

func newInstalled(loaded map[string]bool, bindings map[string][]string) *installed {
	in := &installed{loaded: loaded, bindingOf: map[string]string{}, written: map[string]bool{}, bound: map[string]bool{}, recorded: map[string]bool{}, ever: map[string]bool{}}
	for p, bs := range bindings {
		for _, b := range bs {
			in.bindingOf[b] = p
		}
	}
	return in
}

// observe reads what the final event ev shows of the replayed policies.
func (in *installed) observe(ev *Event) {
	changed := false
	mark := func(m map[string]bool, policy string, on bool) {
		if in.loaded[policy] && m[policy] != on {
			m[policy] = on
			changed = true
		}
	}
	for k, v := range ev.Annotations {
		switch {
		case k == ValidationFailureAnnotation:
			var fs []validationFailure
			if json.Unmarshal([]byte(v), &fs) == nil {
				for _, f := range fs {
					mark(in.recorded, f.Policy, true)
				}
			}
		default:
			if p, _, ok := strings.Cut(k, "/"); ok {
				mark(in.recorded, p, true)
			}
		}
	}
	if m := vapDenied.FindStringSubmatch(ev.Message()); m != nil {
		mark(in.recorded, m[1], true)
	}
	if ref := ev.ObjectRef; ref != nil && ref.APIGroup == "admissionregistration.k8s.io" && ref.Subresource == "" && ev.Code() >= 200 && ev.Code() < 300 && !isDryRun(ev) {
		switch ref.Resource {
		case "validatingadmissionpolicies":
			switch ev.Verb {
			case "create", "update", "patch", "apply":
				mark(in.written, ref.Name, true)
			case "delete":
				mark(in.written, ref.Name, false)
				mark(in.recorded, ref.Name, false)
			}
		case "validatingadmissionpolicybindings":
			if p, ok := in.bindingOf[ref.Name]; ok {
				switch ev.Verb {
				case "create", "update", "patch", "apply":
					mark(in.bound, p, true)
				}
			}
		}
	}
	if !changed {
		return
	}
	next := map[string]bool{}
	for p := range in.loaded {
		if in.recorded[p] || (in.written[p] && in.bound[p]) {
			next[p] = true
			in.ever[p] = true
		}
	}
	in.evidenced = next
}

// byAnnotations says whether the audit annotations the log records for the job's request are
// evidence of what the server did: the replay checks the log, validating admission ran, and
// the log shows some of the replayed policies installed (evidenced).
func (j *job) byAnnotations() bool {
	return len(j.evidenced) > 0 && (j.rec.vapRan || j.ev.Annotations[ValidationFailureAnnotation] != "")
}

// summarize lists in the summary which policies the log showed installed.
func (in *installed) summarize(s *Summary) {
	for p := range in.loaded {
		if in.ever[p] {
			s.CheckedPolicies = append(s.CheckedPolicies, p)
		} else {
			s.UncheckedPolicies = append(s.UncheckedPolicies, p)
		}
	}
	slices.Sort(s.CheckedPolicies)
	slices.Sort(s.UncheckedPolicies)
}

// recordedVerdictOf describes the first verdict of one of the policies the event records: a
// validation_failure entry, a `<policy>/<key>` audit annotation, a denial; "" when it records
// none.
func recordedVerdictOf(ev *Event, policies map[string]bool) string {
	if m := vapDenied.FindStringSubmatch(ev.Message()); m != nil && policies[m[1]] {
		return "a denial by " + m[0][:len(m[0])-len(" denied request: ")]
	}
	for _, k := range slices.Sorted(maps.Keys(ev.Annotations)) {
		if k == ValidationFailureAnnotation {
			var fs []validationFailure
			if json.Unmarshal([]byte(ev.Annotations[k]), &fs) == nil {
				for _, f := range fs {
					if policies[f.Policy] {
						return fmt.Sprintf("the validation failure %s of policy %s, binding %s", ev.Annotations[k], f.Policy, f.Binding)
					}
				}
			}
		} else if p, _, ok := strings.Cut(k, "/"); ok && policies[p] {
			return fmt.Sprintf("the audit annotation %s=%q", k, ev.Annotations[k])
		}
	}
	return ""
}
