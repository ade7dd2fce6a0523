package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestCRDLearnedAhead: a CRD the log creates without its object serves the paramKind of a
// policy; a request comes before the first use of its resource, which shows the kind. The
// replay reads the log ahead for that use when it can read the log again (a file, not standard
// input), and decides the request on what the CRD served then; a write of the CRD between the
// two, or a param written before the kind was learned whose object the log does not hold,
// leaves what it needs unknown.
func TestCRDLearnedAhead(t *testing.T) {
	t.Parallel()
	ps, bs := crdPolicies()
	crdE := func(id, verb, sub string, when float64) event {
		user := "admin"
		if sub == "status" {
			user = "system:apiserver"
		}
		// Without its object, as a CRD logged at level Metadata.
		return event{id: id, verb: verb, group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions", sub: sub, name: "replicalimits.rules.example.com", code: map[string]int32{"create": 201}[verb] + map[bool]int32{true: 200}[verb != "create"], received: at(t, when), user: user}
	}
	depE := func(id string, replicas int64, when float64, code int32, message string) event {
		d := deploymentObject(id, replicas)
		e := event{id: id, verb: "create", group: "apps", version: "v1", resource: "deployments", ns: "app", name: id, code: code, message: message, received: at(t, when), req: d}
		if code == 201 {
			e.resp = d
		}
		return e
	}
	limitE := func(id, name string, when float64) event {
		l := customObject("ReplicaLimit", name, "rules", map[string]any{"max": int64(3)})
		return event{id: id, verb: "create", group: "rules.example.com", version: "v1", resource: "replicalimits", ns: "rules", name: name, code: 201, received: at(t, when), req: l, resp: l}
	}
	atMetadata := func(line string) string {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		ev["level"] = auditlog.LevelMetadata
		delete(ev, "requestObject")
		delete(ev, "responseObject")
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	notFound := `deployments.apps "early" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit' denied request: failed to configure binding: no params found for policy binding with ` + "`Deny`" + ` parameterNotFoundAction`
	created := []event{crdE("crd", "create", "", 0), crdE("crd-status", "update", "status", 0.02)}
	tests := []struct {
		name   string
		lines  []event
		meta   string // the id of the event logged at level Metadata
		stdin  bool
		opts   []Option
		want   string // early's decision and reason, or its detail
		detail string
	}{{
		name:  "learned ahead",
		lines: append(created[:2:2], depE("early", 5, 50, 422, notFound), limitE("limit", "limit", 60), depE("later", 5, 65, 422, msg(tooManyReplicas, "later"))),
		want:  DecisionDeny,
	}, {
		name:  "standard input, copied to a file",
		lines: append(created[:2:2], depE("early", 5, 50, 422, notFound), limitE("limit", "limit", 60)),
		stdin: true,
		want:  DecisionDeny,
	}, {
		name:   "standard input streamed is not read again",
		lines:  append(created[:2:2], depE("early", 5, 50, 422, notFound), limitE("limit", "limit", 60)),
		stdin:  true,
		opts:   []Option{WithPoliciesThroughout()},
		want:   DecisionIndeterminate,
		detail: "param-kind-unknown: paramKind rules.example.com/v1 ReplicaLimit may be served by a CustomResourceDefinition of rules.example.com the log wrote at audit.jsonl:1 without its object",
	}, {
		name:   "the CRD written between",
		lines:  append(created[:2:2], depE("early", 5, 50, 422, notFound), crdE("crd-update", "update", "", 55), limitE("limit", "limit", 60)),
		want:   DecisionIndeterminate,
		detail: "param-kind-unknown: ",
	}, {
		// Another CRD of the group may have held the kind's names until it was deleted.
		name: "another CRD of the group deleted between",
		lines: append(created[:2:2], depE("early", 5, 50, 422, notFound),
			event{id: "other-crd-delete", verb: "delete", group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions", name: "oldlimits.rules.example.com", code: 200, received: at(t, 55)},
			limitE("limit", "limit", 60)),
		want:   DecisionIndeterminate,
		detail: "param-kind-unknown: ",
	}, {
		// A log that does not record the CRD's status writes would not show those that accept
		// its names later either.
		name:   "no status write logged",
		lines:  []event{created[0], depE("early", 5, 50, 422, notFound), limitE("limit", "limit", 60)},
		want:   DecisionIndeterminate,
		detail: "param-kind-unknown: ",
	}, {
		// The param was created before the request, at level Metadata: the replay learns its
		// kind later, from another object, and does not know the param.
		name:   "a param written before the kind was learned",
		lines:  append(created[:2:2], limitE("limit", "limit", 45), depE("early", 5, 50, 422, msg(tooManyReplicas, "early")), limitE("other", "other", 60)),
		meta:   "limit",
		want:   DecisionIndeterminate,
		detail: "param-unknown: replicalimits.rules.example.com rules/limit unknown",
	}, {
		// So when the replay learns the kind at its use, reading the log in order.
		name:   "a param written before the kind was learned at its use",
		lines:  append(created[:2:2], limitE("limit", "limit", 45), limitE("other", "other", 60), depE("early", 5, 65, 422, msg(tooManyReplicas, "early"))),
		meta:   "limit",
		stdin:  true,
		want:   DecisionIndeterminate,
		detail: "param-unknown: replicalimits.rules.example.com rules/limit unknown",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var text []string
			for _, e := range tc.lines {
				l := e.line(t)
				if e.id == tc.meta {
					l = atMetadata(l)
				}
				text = append(text, l)
			}
			data := strings.Join(text, "\n") + "\n"
			src := Source{Name: "audit.jsonl", Reader: strings.NewReader(data)}
			if !tc.stdin {
				src = Source{Name: filepath.Join(t.TempDir(), "audit.jsonl")}
				if err := os.WriteFile(src.Name, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sum, recs := replaySources(t, ps, bs, append([]Option{WithCheckRecorded(true)}, tc.opts...), src)
			rec := recs["early"]
			if rec == nil || rec.Decision != tc.want || !strings.Contains(rec.Indeterminate, tc.detail) {
				t.Errorf("early: %s, want %s %q", describeRecord(rec), tc.want, tc.detail)
			}
			if rec := recs["later"]; rec != nil && rec.Decision != DecisionDeny {
				t.Errorf("later: %s, want deny", describeRecord(rec))
			}
			if len(sum.Disagreements) != 0 {
				t.Errorf("disagreements: %v", sum.Disagreements)
			}
		})
	}
}

// TestLearnedInAnotherVersion: a CRD written without its object (at level Metadata) is learned
// from a use, in that use's version; a request in another version is of the same CRD, which
// the server converts to the version a policy's rule names (matchPolicy Equivalent: random
// parity seed c:511, a v1beta1 Widget, a policy of v1). The replay does not know how the CRD
// converts it: the request is unknown-resource, where it was decided without the policy, and
// the version learned first stays learned.
func TestLearnedInAnotherVersion(t *testing.T) {
	t.Parallel()
	ps, bs := crdPolicies()
	crd := event{id: "crd", verb: "create", group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions", name: "widgets.rules.example.com", code: 201, received: at(t, 0)}
	widget := func(id, version string, size int64, when float64, code int32, message string) event {
		w := customObject("Widget", id, "app", map[string]any{"size": size})
		w["apiVersion"] = "rules.example.com/" + version
		e := event{id: id, verb: "create", group: "rules.example.com", version: version, resource: "widgets", ns: "app", name: id, code: code, message: message, received: at(t, when), req: w}
		if code == 201 {
			e.resp = w
		}
		return e
	}
	lines := []string{crd.line(t), widget("first", "v1", 1, 1, 201, "").line(t), widget("beta", "v1beta1", 5, 2, 201, "").line(t), widget("again", "v1", 50, 3, 422, msg(widgetTooBig, "again")).line(t)}
	_, recs := replayLinesWith(t, ps, bs, nil, lines...)
	if rec := recs["beta"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonUnknownResource {
		t.Errorf("beta: %s, want indeterminate (unknown-resource): the CRD's conversion from v1beta1 is not known", describeRecord(rec))
	}
	// A refused create of a learned CRD's object is not known as its schema prunes and
	// defaults it; its resource is.
	if rec := recs["again"]; rec == nil || rec.Reason == ReasonUnknownResource {
		t.Errorf("again: %s, want a record of a resource the replay knows: v1 stays learned", describeRecord(rec))
	}
}
