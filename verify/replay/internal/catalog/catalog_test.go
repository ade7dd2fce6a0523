package catalog

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
)

// owner records the barrier's calls as the replay's owner makes them: a second Quiesce
// before Changed or Resume does nothing, nor a Resume after Changed. It holds the catalog to
// its barrier: what evaluations read of it (the CRDs served, the kinds learned) does not
// change outside one.
type owner struct {
	t        *testing.T
	c        *Catalog
	quiesced bool
	calls    []string
	// seen is what evaluations could read of the catalog when the last barrier ended.
	seen string
}

// readable is what evaluations read of the catalog.
func (o *owner) readable() string {
	if o.c == nil {
		return ""
	}
	learned := slices.Sorted(maps.Keys(o.c.learned))
	return strings.Join(o.c.Schema().CRDs(), ",") + " learned " + strings.Join(learned, ",")
}

func (o *owner) Quiesce() {
	if o.quiesced {
		return
	}
	if got := o.readable(); got != o.seen {
		o.t.Errorf("the catalog changed outside a barrier: %q, then %q", o.seen, got)
	}
	o.quiesced = true
	o.calls = append(o.calls, "quiesce")
}
func (o *owner) Removed(gr schema.GroupResource) { o.calls = append(o.calls, "removed "+gr.String()) }
func (o *owner) Changed(context.Context) error {
	o.quiesced, o.seen = false, o.readable()
	o.calls = append(o.calls, "changed")
	return nil
}
func (o *owner) Resume(context.Context) {
	if !o.quiesced {
		return
	}
	o.quiesced, o.seen = false, o.readable()
	o.calls = append(o.calls, "resume")
}

func newCatalog(t *testing.T) (*Catalog, *owner) {
	t.Helper()
	cat, err := vapcschema.Builtin(verify.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	o := &owner{t: t}
	c := New(cat, o)
	o.c = c
	o.seen = o.readable()
	return c, o
}

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// widgets is the CRD widgets.example.com with the conditions given (NamesAccepted,
// Established) true, established at the time given.
func widgets(plural string, conditions ...apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinition {
	names := apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: "widget", Kind: "Widget", ListKind: "WidgetList"}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped, Names: names,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}},
	}
	for _, c := range conditions {
		crd.Status.Conditions = append(crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: c, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)})
		crd.Status.AcceptedNames = names
	}
	return crd
}

// TestFollow: the catalog serves a CRD of the log once the apiserver does (NamesAccepted or
// Established), changes it between the halves of the owner's barrier, and not again for a
// write that changes nothing it serves; a CRD whose deletion began is removed with its
// objects.
func TestFollow(t *testing.T) {
	widgetsGVR := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	deleting := widgets("widgets", apiextensionsv1.Established)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	grown := widgets("widgets", apiextensionsv1.Established)
	grown.Spec.Versions = append(grown.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true})
	for _, tc := range []struct {
		name    string
		writes  []*apiextensionsv1.CustomResourceDefinition
		served  bool
		calls   []string
		changes []string
	}{
		{name: "just created: not served", writes: []*apiextensionsv1.CustomResourceDefinition{widgets("widgets")}},
		{name: "names accepted", writes: []*apiextensionsv1.CustomResourceDefinition{widgets("widgets"), widgets("widgets", apiextensionsv1.NamesAccepted)}, served: true,
			calls: []string{"quiesce", "changed"}, changes: []string{"log:2: widgets.example.com served: Widget Namespaced in v1"}},
		{name: "established after: nothing served changes", writes: []*apiextensionsv1.CustomResourceDefinition{widgets("widgets", apiextensionsv1.NamesAccepted), widgets("widgets", apiextensionsv1.NamesAccepted, apiextensionsv1.Established)}, served: true,
			calls: []string{"quiesce", "changed"}, changes: []string{"log:1: widgets.example.com served: Widget Namespaced in v1"}},
		{name: "a version more", writes: []*apiextensionsv1.CustomResourceDefinition{widgets("widgets", apiextensionsv1.Established), grown}, served: true,
			calls: []string{"quiesce", "changed", "quiesce", "changed"}, changes: []string{"log:1: widgets.example.com served: Widget Namespaced in v1", "log:2: widgets.example.com changed: Widget Namespaced in v1, v2"}},
		{name: "deletion begun", writes: []*apiextensionsv1.CustomResourceDefinition{widgets("widgets", apiextensionsv1.Established), deleting},
			calls:   []string{"quiesce", "changed", "quiesce", "removed widgets.example.com", "changed"},
			changes: []string{"log:1: widgets.example.com served: Widget Namespaced in v1", "log:2: widgets.example.com removed: no longer served"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, o := newCatalog(t)
			for i, crd := range tc.writes {
				if err := c.Follow(context.Background(), crd, "log", i+1, t0.Add(time.Duration(i)*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := c.Resources().RESTMapper().RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "v1")
			if served := err == nil; served != tc.served {
				t.Errorf("served %v, want %v (%v)", served, tc.served, err)
			}
			var changes []string
			for _, ch := range c.Changes() {
				changes = append(changes, ch.String())
			}
			if diff := cmp.Diff(tc.changes, changes); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.calls, o.calls); diff != "" {
				t.Errorf("the owner's calls (-want +got):\n%s", diff)
			}
			if tc.served && c.Strategies(widgetsGVR.GroupVersion().WithKind("Widget")) == nil {
				t.Error("no registry strategies for a served kind")
			}
		})
	}
}

// TestSchemaRefreshing: within SchemaRefreshDelay of the log's change of a CRD, the
// MutatingAdmissionPolicy plugin may not have had its resource's schema; a snapshot's CRD and
// a built-in resource are never refreshing.
func TestSchemaRefreshing(t *testing.T) {
	c, _ := newCatalog(t)
	if err := c.Follow(context.Background(), widgets("widgets", apiextensionsv1.Established), "log", 3, t0); err != nil {
		t.Fatal(err)
	}
	if err := c.Follow(context.Background(), widgets("gadgets", apiextensionsv1.Established), "snapshot.yaml", 0, time.Time{}); err != nil {
		t.Fatal(err)
	}
	widgetsGVR := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	for _, tc := range []struct {
		after time.Duration
		want  bool
	}{{-time.Second, false}, {0, true}, {4 * time.Second, true}, {SchemaRefreshDelay - time.Millisecond, true}, {SchemaRefreshDelay, false}, {time.Minute, false}} {
		if got := c.SchemaRefreshing(widgetsGVR, t0.Add(tc.after)) != ""; got != tc.want {
			t.Errorf("%s after the change: refreshing %v, want %v", tc.after, got, tc.want)
		}
	}
	for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, {Group: "example.com", Version: "v1", Resource: "gadgets"}} {
		if why := c.SchemaRefreshing(gvr, t0); why != "" {
			t.Errorf("%s is refreshing: %s", gvr, why)
		}
	}
}

// TestParamKinds: a paramKind a CRD of the log begins to serve is resolving until the CRD has
// been Established for ParamResolveDelay; once its CRD is deleted, the kind keeps its mapping
// and its params are unknown; a kind no CRD the replay knows serves is missing, unless the
// log holds every CRD write.
func TestParamKinds(t *testing.T) {
	policy := func(name, apiVersion, kind string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: apiVersion, Kind: kind}
		return p
	}
	binding := func(policy string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: policy}, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy}}
	}
	c, _ := newCatalog(t)
	c.InitParamKinds([]*admissionregistrationv1.ValidatingAdmissionPolicy{policy("by-widget", "example.com/v1", "Widget"), policy("by-gizmo", "other.io/v1", "Gizmo"), policy("by-gadget", "example.com/v1", "Gadget")},
		[]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{binding("by-widget"), binding("by-gizmo"), binding("by-gadget")})
	at := func(d time.Duration) func() time.Time { return func() time.Time { return t0.Add(d) } }
	type state struct {
		Resolving, Pending, Missing bool
		Unknown                     []string
		// Until is after t0, when the kinds resolving are found for sure.
		Until time.Duration
	}
	summarize := func(u Unsettled) state {
		s := state{Resolving: u.Resolving != "", Pending: u.Pending != "", Missing: u.Missing != ""}
		if !u.Until.IsZero() {
			s.Until = u.Until.Sub(t0)
		}
		for gr := range u.Unknown {
			s.Unknown = append(s.Unknown, gr.String())
		}
		return s
	}
	check := func(step string, policies []string, received time.Duration, allSince bool, want state) {
		t.Helper()
		if diff := cmp.Diff(want, summarize(c.UnsettledFor(policies, at(received), allSince))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step, diff)
		}
	}
	widget := []string{"by-widget"}
	check("before the CRD: a group no CRD the replay knows serves", widget, 0, false, state{Missing: true})
	check("before the CRD, the log holding every CRD write", widget, 0, true, state{})
	c.Opaque("gizmos.other.io", "log:1", t0, true, false)
	if u := c.UnsettledFor([]string{"by-gizmo"}, at(0), true); !strings.Contains(u.Missing, "log:1") {
		t.Errorf("a kind of a group the log wrote a CRD of without its object: missing %q, want it to name log:1", u.Missing)
	}
	if err := c.Follow(context.Background(), widgets("widgets", apiextensionsv1.Established), "log", 2, t0); err != nil {
		t.Fatal(err)
	}
	if c.ResolvingKinds() == nil {
		t.Error("no kind resolving after its CRD began to be served")
	}
	check("just served", widget, time.Second, false, state{Resolving: true, Until: ParamResolveDelay})
	// A second kind served 10 s later, its condition Established since t0 (the window then
	// ends a second after ParamResolveDelay): a request of both policies is Pending until the
	// later is found for sure.
	gadgets := widgets("gadgets", apiextensionsv1.Established)
	gadgets.Spec.Names.Kind, gadgets.Spec.Names.ListKind, gadgets.Spec.Names.Singular = "Gadget", "GadgetList", "gadget"
	gadgets.Status.AcceptedNames = gadgets.Spec.Names
	if err := c.Follow(context.Background(), gadgets, "log", 3, t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	both := []string{"by-widget", "by-gadget"}
	check("two kinds just served", both, 11*time.Second, false, state{Pending: true, Until: time.Second + ParamResolveDelay})
	// (Pending still: the alternative evaluators take the first, found, as not found.)
	check("the first found", both, ParamResolveDelay+time.Second/2, false, state{Pending: true, Until: time.Second + ParamResolveDelay})
	check("both found", both, ParamResolveDelay+time.Second, false, state{})
	check("after ParamResolveDelay", widget, ParamResolveDelay, false, state{})
	if err := c.Remove(context.Background(), "widgets.example.com", "log", 3, t0.Add(2*ParamResolveDelay), "deleted"); err != nil {
		t.Fatal(err)
	}
	check("its CRD deleted", widget, 2*ParamResolveDelay+time.Second, false, state{Unknown: []string{"widgets.example.com"}})
	if _, err := c.ParamResources(nil).RESTMapper().RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "v1"); err != nil {
		t.Errorf("the mapping the policy source found is not kept: %v", err)
	}
}

// TestLearn: a kind learned from its use is served by a CRD without a schema, within the
// owner's barrier; not one of a CRD the log removed, nor without a catalog to follow.
func TestLearn(t *testing.T) {
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	use := Use{Resource: gadgets, Kind: "Gadget", Namespaced: true, Verb: "create", File: "log", Line: 7, At: t0}
	for _, tc := range []struct {
		name    string
		removed bool // the log removed gadgets.example.com first
		want    bool
		changes []string
	}{
		{name: "first use", want: true, changes: []string{
			"log:7: gadgets.example.com served: Gadget Namespaced in v1",
			"log:7: gadgets.example.com learned from a create of it: Gadget Namespaced in v1, its schema not known (created before the log shows it)"}},
		{name: "a CRD the log removed", removed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newCatalog(t)
			if tc.removed {
				if err := c.Remove(context.Background(), "gadgets.example.com", "log", 3, t0, "deleted"); err != nil {
					t.Fatal(err)
				}
			}
			learned, err := c.Learn(context.Background(), use)
			if err != nil {
				t.Fatal(err)
			}
			var changes []string
			for _, ch := range c.Changes() {
				changes = append(changes, ch.String())
			}
			if learned != tc.want || c.Learned(gadgets) != tc.want {
				t.Errorf("Learn = %v, Learned = %v; want %v", learned, c.Learned(gadgets), tc.want)
			}
			if diff := cmp.Diff(tc.changes, changes); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
	// Resources that are not a catalog follow no CRD.
	cat, err := vapcschema.Builtin(verify.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	c := New(struct{ verify.Resources }{cat}, &owner{t: t})
	if learned, err := c.Learn(context.Background(), use); learned || err != nil {
		t.Errorf("without a catalog: Learn = %v, %v; want false", learned, err)
	}
}
