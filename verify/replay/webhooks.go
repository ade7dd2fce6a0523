package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	sigsjson "sigs.k8s.io/json"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// kube-apiserver's mutating admission webhooks run after its built-in mutating plugins and
// before ValidatingAdmissionPolicy. A replay cannot call them; what one did is in the log only
// as the audit annotations its dispatcher adds (k8s.io/apiserver/pkg/admission/plugin/webhook/
// mutating): mutation.webhook.admission.k8s.io/round_R_index_I says whether it changed the
// object (at level Metadata), patch.webhook.admission.k8s.io/round_R_index_I holds the JSON
// patch it returned (at level Request and above). A replay applies the recorded patches, in
// the server's order, to the object it rebuilt, as the dispatcher does (to the object in the
// request's version, then defaulted); a change it cannot apply leaves the whole object unknown.

// webhookCall is what the log holds of one call of a mutating webhook.
type webhookCall struct {
	round, index          int
	configuration, name   string
	mutated, hasMutation  bool
	patch                 []byte
	patchErr, annotateErr string
}

func (c webhookCall) describe() string {
	return fmt.Sprintf("mutating webhook %q of %q", c.name, c.configuration)
}

// recordedWebhooks are the mutating webhook calls the event's annotations record, in the order
// the server made them.
func recordedWebhooks(ev *Event) []webhookCall {
	calls := map[[2]int]*webhookCall{}
	get := func(key, prefix string) *webhookCall {
		var round, index int
		if _, err := fmt.Sscanf(strings.TrimPrefix(key, prefix), "round_%d_index_%d", &round, &index); err != nil {
			return nil
		}
		c := calls[[2]int{round, index}]
		if c == nil {
			c = &webhookCall{round: round, index: index}
			calls[[2]int{round, index}] = c
		}
		return c
	}
	for k, v := range ev.Annotations {
		switch {
		case strings.HasPrefix(k, mutating.MutationAuditAnnotationPrefix):
			c := get(k, mutating.MutationAuditAnnotationPrefix)
			if c == nil {
				continue
			}
			var m mutating.MutationAuditAnnotation
			if err := json.Unmarshal([]byte(v), &m); err != nil {
				c.annotateErr = fmt.Sprintf("the annotation %s does not decode: %v", k, err)
				continue
			}
			c.configuration, c.name, c.mutated, c.hasMutation = m.Configuration, m.Webhook, m.Mutated, true
		case strings.HasPrefix(k, mutating.PatchAuditAnnotationPrefix):
			c := get(k, mutating.PatchAuditAnnotationPrefix)
			if c == nil {
				continue
			}
			var p struct {
				Configuration string          `json:"configuration"`
				Webhook       string          `json:"webhook"`
				Patch         json.RawMessage `json:"patch"`
				PatchType     string          `json:"patchType"`
			}
			switch err := json.Unmarshal([]byte(v), &p); {
			case err != nil:
				c.patchErr = fmt.Sprintf("the annotation %s does not decode: %v", k, err)
			case p.PatchType != "" && p.PatchType != "JSONPatch":
				c.patchErr = fmt.Sprintf("the annotation %s holds a patch of type %s", k, p.PatchType)
			default:
				c.configuration, c.name, c.patch = p.Configuration, p.Webhook, p.Patch
			}
		}
	}
	out := make([]webhookCall, 0, len(calls))
	for _, c := range calls {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].round != out[j].round {
			return out[i].round < out[j].round
		}
		return out[i].index < out[j].index
	})
	return out
}

// webhookMutation applies the recorded mutating webhook calls of one request in the pipeline
// (Exchange.Mutate). unknown says why the object after them is not known.
type webhookMutation struct {
	calls   []webhookCall
	unknown string
}

func newWebhookMutation(ev *Event, retried string) *webhookMutation {
	if len(ev.Annotations) == 0 {
		return nil
	}
	calls := recordedWebhooks(ev)
	if len(calls) == 0 {
		return nil
	}
	m := &webhookMutation{calls: calls}
	if retried != "" {
		for _, c := range calls {
			if c.mutated {
				// Audit annotations keep the first value set: the patch the log holds is the
				// call's on the first attempt that it returned one in (helper exAA), and the
				// store's next attempt called the webhook again on the version it read. Which
				// attempt that was the log does not say: a webhook its selectors skipped on the
				// first attempt's version, or that returned no patch there, logged nothing then
				// (a helper's review).
				m.unknown = c.describe() + " changed the object, and the log holds its patch of one attempt of the request, not which: " + retried
				break
			}
		}
	}
	return m
}

// mayRetry says why an update's or a patch's admission may have run more than once, the
// store's GuaranteedUpdate trying it again on the version a write that committed first left,
// where the version p the replay decides it on is not the one its first attempt read; ""
// when it ran once.
func mayRetry(t target, p state.Prior) string {
	if t.op != admission.Update {
		return ""
	}
	switch {
	case p.RacedBy != "":
		return "a write that completed while it ran (" + p.RacedBy + ") may have made the store try it again"
	case len(p.Stale) > 0 || p.StaleUnknown != "":
		return "its first attempt may have read the watch cache's copy of an older version, and the store tried it again"
	}
	return ""
}

func (m *webhookMutation) mutate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetObject() == nil || (a.GetOperation() != admission.Create && a.GetOperation() != admission.Update) {
		return nil
	}
	// The calls of round 0 ran in the chain's first pass, those of round 1 when it ran again
	// (reinvocation): a recorded round 1 says the first pass asked for it.
	rc := a.GetReinvocationContext()
	round := 0
	if rc.IsReinvoke() {
		round = 1
	}
	for _, c := range m.calls {
		if c.round != round {
			if c.round > round {
				rc.SetShouldReinvoke()
			}
			continue
		}
		switch {
		case m.unknown != "":
			return nil
		case c.annotateErr != "":
			m.unknown = c.describe() + ": " + c.annotateErr
		case c.patchErr != "":
			m.unknown = c.describe() + ": " + c.patchErr
		case c.patch != nil:
			if err := applyWebhookPatch(a, c.patch); err != nil {
				m.unknown = fmt.Sprintf("%s changed the object, and its recorded patch does not apply to the object the replay rebuilt: %v", c.describe(), err)
			} else if c.mutated {
				// A webhook that changed the object makes the chain run once more, the
				// built-in plugins included (the webhook dispatcher's SetShouldReinvoke,
				// admission.reinvoker): LimitRanger defaults a container it added.
				rc.SetShouldReinvoke()
			}
		case c.mutated:
			m.unknown = c.describe() + " changed the object, and the log does not hold its patch (it does at level Request and above)"
		}
	}
	return nil
}

// unknowns are the fields of the request's object the recorded webhook calls leave unknown.
func (m *webhookMutation) unknowns() []vapccel.Unknown {
	if m == nil || m.unknown == "" {
		return nil
	}
	return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object"}, Why: m.unknown}}
}

// applyWebhookPatch applies a webhook's JSON patch to the attributes' object in the request's
// version, defaults it and puts it back, as the dispatcher does.
func applyWebhookPatch(a admission.Attributes, patch []byte) error {
	if u, ok := a.GetObject().(*unstructured.Unstructured); ok {
		return patchUnstructured(u, patch)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return err
	}
	gvk := a.GetKind()
	versioned, err := kubescheme.Scheme.ConvertToVersion(a.GetObject().DeepCopyObject(), gvk.GroupVersion())
	if err != nil {
		return err
	}
	js, err := json.Marshal(versioned)
	if err != nil {
		return err
	}
	if js, err = p.Apply(js); err != nil {
		return err
	}
	into, err := kubescheme.Scheme.New(gvk)
	if err != nil {
		return err
	}
	// The dispatcher calls a webhook with the object in the version its rule matched (a rule
	// of another version of the resource, or of an equivalent one, under matchPolicy
	// Equivalent), applies its patch there and converts back; the annotation does not say
	// which. A patch that writes fields the request's version does not have was one of
	// another version (helper exAA: autoscaling/v1's targetCPUUtilizationPercentage on a v2
	// HorizontalPodAutoscaler, core/v1's message on an events.k8s.io Event), which the
	// decoder here would drop.
	probe, err := kubescheme.Scheme.New(gvk)
	if err != nil {
		return err
	}
	if strict, err := sigsjson.UnmarshalStrict(js, probe, sigsjson.DisallowUnknownFields); err == nil && len(strict) > 0 {
		return fmt.Errorf("it writes what %s %s does not have (%v): the webhook was called with another version of the object, which the log does not say", gvk.GroupVersion(), gvk.Kind, errors.Join(strict...))
	}
	out, _, err := kubescheme.Codecs.UniversalDeserializer().Decode(js, &gvk, into)
	if err != nil {
		return err
	}
	kubescheme.Scheme.Default(out)
	return kubescheme.Scheme.Convert(out, a.GetObject(), nil)
}

// patchRebuilt applies the recorded mutating webhook calls to an object the replay rebuilt
// from the request without the pipeline (a custom resource's), defaulting it after each patch
// as the dispatcher does where defaults is set, and returns what of the object
// after them is not known. When the object is a stand-in holding only what the log says of it
// (standInObject: a write whose object the log does not hold), a patch that does not apply to
// it applied to the server's object (the server would have refused the request otherwise):
// what it changed is not known (patchedFields), and the rest of the stand-in stays as it was.
func patchRebuilt(ev *Event, u *unstructured.Unstructured, standIn bool, defaults func(obj map[string]any), retried string) []vapccel.Unknown {
	m := newWebhookMutation(ev, retried)
	if m == nil {
		return nil
	}
	whole := func(why string) []vapccel.Unknown {
		return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object"}, Why: why}}
	}
	if m.unknown != "" {
		return whole(m.unknown)
	}
	var changed []vapccel.Unknown
	for _, c := range m.calls {
		switch {
		case c.annotateErr != "":
			return whole(c.describe() + ": " + c.annotateErr)
		case c.patchErr != "":
			return whole(c.describe() + ": " + c.patchErr)
		case c.patch != nil:
			err := patchUnstructured(u, c.patch)
			if err == nil {
				if defaults != nil {
					// The dispatcher defaults what a webhook's patch gives (the apiextensions
					// apiserver's unstructuredDefaulter: its schema's defaults, no pruning).
					defaults(u.Object)
				}
				continue
			}
			why := fmt.Sprintf("%s changed the object, and its recorded patch does not apply to the object the replay rebuilt: %v", c.describe(), err)
			fields, ok := patchedFields(c.patch)
			if !standIn || !ok {
				return whole(why)
			}
			for _, f := range fields {
				changed = append(changed, vapccel.Unknown{Path: f, Why: c.describe() + " changed it by its recorded patch, which applies to the object the log does not hold"})
			}
		case c.mutated:
			return whole(c.describe() + " changed the object, and the log does not hold its patch (it does at level Request and above)")
		}
	}
	return changed
}

// patchedFields are the fields of the object a JSON patch may change: the container of every
// location its operations name (an array's field whole, for an element's); false when the
// patch does not decode.
func patchedFields(patch []byte) ([]vapccel.FieldPath, bool) {
	var ops []struct {
		Path string  `json:"path"`
		From *string `json:"from"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, false
	}
	var out []vapccel.FieldPath
	for _, op := range ops {
		locs := []string{op.Path}
		if op.From != nil {
			locs = append(locs, *op.From)
		}
		for _, loc := range locs {
			tokens := strings.Split(loc, "/")[1:] // RFC 6901: "" is the whole object
			if len(tokens) > 0 {
				tokens = tokens[:len(tokens)-1]
			}
			steps := make([]string, 0, len(tokens))
			for _, t := range tokens {
				if t == "-" || strings.Trim(t, "0123456789") == "" {
					break // an array's element: the array
				}
				steps = append(steps, strings.NewReplacer("~1", "/", "~0", "~").Replace(t))
			}
			out = append(out, objectPath(steps...))
		}
	}
	return out, true
}

// patchUnstructured applies a JSON patch to an object in place.
func patchUnstructured(u *unstructured.Unstructured, patch []byte) error {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return err
	}
	js, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	if js, err = p.Apply(js); err != nil {
		return err
	}
	var patched unstructured.Unstructured
	if err := patched.UnmarshalJSON(js); err != nil {
		return err
	}
	u.Object = patched.Object
	return nil
}
