package replay

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/redact"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// secretSources are where the values of a request's Secret are, for its record's scrub
// (nil for any other resource): the objects the replay built for it, those the log holds (its
// request's and response's), the versions the State holds of it (the one it read, those a
// watch cache may have served, the one it has if there at all), and what each attempt of the
// pipeline evaluated (attempt). A policy's message, audit annotation or warning may quote
// them, and every output of the replay (JSON lines, text, JUnit, the report) is shared more
// widely than the audit log it read. They are decoded only when a text of the record is to be
// scrubbed (values): most records of a Secret's writes say nothing that could quote one. The
// Secrets the evaluation read (a policy's params: paramSecrets) are among them, whatever the
// request's resource; a record of another resource's request has those alone (ev nil).
type secretSources struct {
	ev       *Event
	prior    state.Prior
	objs     []*unstructured.Unstructured
	attempts []runtime.Object
	params   []runtime.Object
	kind     schema.GroupVersionKind
	// gathered, once values has run; namespace and name are shown anyway.
	gathered        *redact.Values
	namespace, name string
}

func secretSourcesOf(t target, ev *Event, prior state.Prior, objs ...*unstructured.Unstructured) *secretSources {
	if t.gvr.Group != "" || t.gvr.Resource != "secrets" {
		return nil
	}
	return &secretSources{ev: ev, prior: prior, objs: objs, kind: t.reqKind}
}

// attempt adds the objects an attempt of the pipeline evaluated.
func (s *secretSources) attempt(attrs admission.Attributes) {
	s.attempts = append(s.attempts, attrs.GetObject(), attrs.GetOldObject())
}

// values gathers the values, once.
func (s *secretSources) values() *redact.Values {
	if s.gathered != nil {
		return s.gathered
	}
	v := &redact.Values{}
	for _, u := range s.objs {
		v.Of(u)
	}
	for _, o := range s.attempts {
		v.Of(versioned(o, s.kind))
	}
	ofSecrets(v, s.params)
	if s.ev != nil {
		for _, raw := range [][]byte{s.ev.RequestObject, s.ev.ResponseObject} {
			// The Secret, or a patch of it; not a refusal's Status or a DELETE's options.
			if u, err := auditlog.DecodeObject(raw); err == nil && (u.GetKind() == "" || u.GetKind() == "Secret") {
				v.Of(u)
			}
		}
	}
	priorValues(v, s.prior)
	v.Shown(s.namespace, s.name)
	s.gathered = v
	return v
}

// The scrubs of texts, which gather the values only for a text that is there.

func (s *secretSources) scrub(t string) string {
	if t == "" {
		return t
	}
	return s.values().Scrub(t)
}

func (s *secretSources) scrubAll(ts []string) []string {
	if len(ts) == 0 {
		return ts
	}
	return s.values().ScrubAll(ts)
}

func (s *secretSources) scrubValues(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	return s.values().ScrubValues(m)
}

// ofSecrets gathers the values of Secrets a policy read as its params.
func ofSecrets(v *redact.Values, objs []runtime.Object) {
	for _, o := range objs {
		v.Of(versioned(o, corev1.SchemeGroupVersion.WithKind("Secret")))
	}
}

// priorValues gathers the values of the versions of a Prior.
func priorValues(v *redact.Values, p state.Prior) {
	if u, _ := p.Decode(); u != nil {
		v.Of(u)
	}
	for _, s := range p.Stale {
		priorValues(v, s)
	}
	if p.IfThere != nil {
		priorValues(v, *p.IfThere)
	}
}

// paramSecrets adds the Secrets the request's evaluation read (state.StateView.Secrets: a
// policy's params, in every state it was evaluated on) to the values its record's texts are
// scrubbed of: a policy's message, audit annotation or warning may quote its param's values,
// on any resource's request. matched says a policy whose params are Secrets matched it: what
// the log says its policies answered is marked (scrubSecret), the replay having read its
// params or not.
func (r *Record) paramSecrets(objs []runtime.Object, matched bool) {
	if len(objs) == 0 && !matched {
		return
	}
	if r.secret == nil {
		r.secret = &secretSources{}
	}
	r.secret.params = append(r.secret.params, objs...)
}

// isSecretKind says whether a policy's paramKind is a core Secret ("v1", or "/v1", which
// the apiserver parses the same).
func isSecretKind(k *admissionregistrationv1.ParamKind) bool {
	if k == nil || k.Kind != "Secret" {
		return false
	}
	gv, err := schema.ParseGroupVersion(k.APIVersion)
	return err == nil && gv.Group == ""
}

// scrubbed is the record as the outputs see it: for a request on a Secret, a copy without
// the values its objects hold in any text the replay writes of it; the record itself otherwise.
// The summary and the sink take it once the decision and the comparison with the log are
// made; the record stays as it is for what reads it after (the State's following of the
// write). What the policies answered on another version of the Secret (a lag's alternative,
// the first attempt's annotations and warnings, the log's verdicts a disagreement quotes)
// holds values the record's objects do not: it is written as redact.Mark. The Secret's name
// and namespace stay (redact.Values.Shown).
func (r *Record) scrubbed() *Record {
	if r.secret == nil {
		return r
	}
	c := *r
	c.secret = nil
	c.Results, c.Alternatives = slices.Clone(r.Results), slices.Clone(r.Alternatives)
	c.scrubSecret(r.secret)
	return &c
}

// scrubSecret scrubs the texts of a copy of a Secret's record (see scrubbed): the maps and
// slices it replaces are new, the Results and Alternatives its own.
func (r *Record) scrubSecret(s *secretSources) {
	s.namespace, s.name = r.Namespace, r.Name
	for i := range r.Alternatives {
		a := &r.Alternatives[i]
		if a.refusal {
			// Another refusal on the same objects.
			a.Message, a.Detail, a.Warnings, a.AuditAnnotations = s.scrub(a.Message), s.scrub(a.Detail), s.scrubAll(a.Warnings), s.scrubValues(a.AuditAnnotations)
			continue
		}
		a.Message, a.Warnings, a.AuditAnnotations, a.Detail = redact.Marked(a.Message), redact.MarkedAll(a.Warnings), redact.MarkedValues(a.AuditAnnotations), s.scrub(a.Detail)
	}
	if r.AnnotationsSource != "" {
		// Another evaluation's, on another version of the Secret (see AnnotationsSource).
		r.AuditAnnotations, r.Warnings = redact.MarkedValues(r.AuditAnnotations), redact.MarkedAll(r.Warnings)
	}
	r.Disagreements = redact.Quoted(r.Disagreements)
	if r.recordedVerdict != "" {
		r.recordedVerdict = redact.Mark
	}
	if s.ev != nil {
		r.Mutations = sizedMutations(r.Mutations)
	} else {
		r.Mutations = scrubbedMutations(r.Mutations, s)
	}
	r.Message, r.Indeterminate = s.scrub(r.Message), s.scrub(r.Indeterminate)
	r.Notes, r.Warnings, r.AuditAnnotations = s.scrubAll(r.Notes), s.scrubAll(r.Warnings), s.scrubValues(r.AuditAnnotations)
	for i := range r.Results {
		res := &r.Results[i]
		res.Message, res.AuditAnnotations = s.scrub(res.Message), s.scrubValues(res.AuditAnnotations)
	}
}

// scrubbedMutations are the mutations of another resource's object than a Secret, whose
// policies read Secrets (params): what their operations write is scrubbed of the Secrets'
// values, and an operation that the scrub would leave no valid JSON is marked whole.
func scrubbedMutations(changes []verify.Change, s *secretSources) []verify.Change {
	if len(changes) == 0 {
		return changes
	}
	out := make([]verify.Change, len(changes))
	for i, c := range changes {
		out[i] = c
		if p := s.scrub(string(c.Patch)); p != string(c.Patch) {
			out[i].Patch = json.RawMessage(p)
			if !json.Valid(out[i].Patch) {
				out[i].Patch = json.RawMessage(strconv.Quote(redact.Mark))
			}
		}
	}
	return out
}

// sizedMutations are a Secret's mutations with the values their operations write (data,
// stringData, annotations: anything but the rest of metadata) replaced by their sizes
// (redact.Sizes), the paths kept: what a mutating policy wrote into a Secret is a value of it.
func sizedMutations(changes []verify.Change) []verify.Change {
	if len(changes) == 0 {
		return changes
	}
	out := make([]verify.Change, len(changes))
	for i, c := range changes {
		out[i] = c
		var ops []map[string]any
		if err := json.Unmarshal(c.Patch, &ops); err != nil {
			out[i].Patch = json.RawMessage(strconv.Quote(redact.Mark))
			continue
		}
		for _, op := range ops {
			path, _ := op["path"].(string)
			if v, ok := op["value"]; ok && (!strings.HasPrefix(path, "/metadata/") || strings.HasPrefix(path, "/metadata/annotations")) {
				op["value"] = redact.Sizes(v)
			}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ops); err == nil {
			out[i].Patch = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		}
	}
	return out
}
