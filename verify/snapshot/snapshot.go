// Package snapshot takes from a live cluster what a replay of audit logs through a set of
// policies starts from (vapc replay --snapshot): the CustomResourceDefinitions, the
// MutatingAdmissionPolicies and their bindings, and the objects of the resources the policies
// read: namespaces, the objects of their paramKinds, those they see as oldObject in an UPDATE
// or DELETE, and what kube-apiserver's admission plugins read for the requests they see. It
// lists them with client-go and writes them as YAML documents, one List a resource as the API
// lists it.
package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/verify/internal/plugininput"
)

// Resource is a resource a snapshot lists, and why a replay reads it.
type Resource struct {
	schema.GroupVersionResource
	Why string
}

var (
	crdsGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	coreEvents    = schema.GroupResource{Resource: "events"}
	eventsK8sIO   = schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// Resources returns the resources a replay of the policies reads, as the cluster serves them
// (mapper; subresources, when not nil, gives the resources that have a subresource, for a rule
// of "*/scale"), CustomResourceDefinitions and namespaces first. Warnings say what cannot be
// listed: a paramKind or resource the cluster does not serve, a wildcard rule of every resource.
func Resources(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, mapper meta.RESTMapper, subresources func(sub string) ([]schema.GroupVersionResource, error)) (resources []Resource, warnings []string) {
	seen := map[schema.GroupResource]int{}
	add := func(gvr schema.GroupVersionResource, why string) {
		if i, ok := seen[gvr.GroupResource()]; ok {
			if !strings.Contains(resources[i].Why, why) {
				resources[i].Why += "; " + why
			}
			return
		}
		seen[gvr.GroupResource()] = len(resources)
		resources = append(resources, Resource{gvr, why})
	}
	add(crdsGVR, "the kinds of the log and the paramKinds")
	add(namespacesGVR, "namespaceSelector and namespaceObject")
	// A MutatingAdmissionPolicy leaves no trace in the audit log: the replay needs to know
	// which requests one may have changed (where the cluster serves them).
	for _, res := range []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
		if gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Resource: res}); err == nil {
			add(gvr, "MutatingAdmissionPolicies change objects before the policies see them")
		}
	}
	var rest []Resource
	restSeen := map[schema.GroupResource]int{}
	addRest := func(gvr schema.GroupVersionResource, why string) {
		if _, ok := seen[gvr.GroupResource()]; ok {
			add(gvr, why)
			return
		}
		if i, ok := restSeen[gvr.GroupResource()]; ok {
			if !strings.Contains(rest[i].Why, why) {
				rest[i].Why += "; " + why
			}
			return
		}
		restSeen[gvr.GroupResource()] = len(rest)
		rest = append(rest, Resource{gvr, why})
	}
	for _, p := range policies {
		if pk := p.Spec.ParamKind; pk != nil {
			gv, err := schema.ParseGroupVersion(pk.APIVersion)
			if err == nil {
				var m *meta.RESTMapping
				m, err = mapper.RESTMapping(gv.WithKind(pk.Kind).GroupKind(), gv.Version)
				if err == nil {
					addRest(m.Resource, "paramKind of "+p.Name)
				}
			}
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("policy %s: paramKind %s %s is not served by the cluster: its params are not in the snapshot (%v)", p.Name, pk.APIVersion, pk.Kind, err))
			}
		}
		mc := p.Spec.MatchConstraints
		if mc == nil {
			continue
		}
		for _, r := range mc.ResourceRules {
			if !readsOld(r.Operations) {
				continue
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					base, sub, _ := strings.Cut(res, "/")
					if g == "*" || base == "*" {
						// A wildcard the cluster's discovery resolves: a resource of every
						// group, every resource with a subresource.
						var found []schema.GroupVersionResource
						switch {
						case base != "*":
							// Of every group the ones built in: an aggregated API's
							// resource of the name (metrics.k8s.io's pods) is not the
							// replay's to read.
							all, _ := mapper.ResourcesFor(schema.GroupVersionResource{Resource: base})
							for _, gvr := range all {
								if clientgoscheme.Scheme.IsGroupRegistered(gvr.Group) {
									found = append(found, gvr)
								} else {
									warnings = append(warnings, fmt.Sprintf("policy %s: %s, which the wildcard rule (apiGroups %v) reaches, is not built in: not in the snapshot (give its objects with another --snapshot file if the log writes them)", p.Name, gvr.GroupResource(), r.APIGroups))
								}
							}
						case sub != "" && sub != "*" && subresources != nil:
							var err error
							if found, err = subresources(sub); err != nil {
								warnings = append(warnings, fmt.Sprintf("policy %s: the rule of %s: %v: the resources of those groups are not in the snapshot", p.Name, res, err))
							}
						}
						n := 0
						for _, gvr := range found {
							if gvr.GroupResource() == eventsK8sIO && slices.ContainsFunc(found, func(o schema.GroupVersionResource) bool { return o.GroupResource() == coreEvents }) {
								continue // the same objects as core's (kube-apiserver serves both from one storage)
							}
							if g == "*" || g == gvr.Group {
								addRest(gvr, "oldObject of "+p.Name+" ("+res+")")
								n++
							}
						}
						if n == 0 {
							warnings = append(warnings, fmt.Sprintf("policy %s: the wildcard rule (apiGroups %v, resources %v) is not in the snapshot: give the objects it reads with another --snapshot file", p.Name, r.APIGroups, r.Resources))
						}
						continue
					}
					for _, v := range versions(r.APIVersions) {
						gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Group: g, Version: v, Resource: base})
						if err != nil {
							warnings = append(warnings, fmt.Sprintf("policy %s: %s is not served by the cluster: not in the snapshot (%v)", p.Name, schema.GroupResource{Group: g, Resource: base}, err))
							continue
						}
						addRest(gvr, "oldObject of "+p.Name)
					}
				}
			}
		}
	}
	// What kube-apiserver's admission plugins read for the requests the policies see (the
	// ServiceAccount and LimitRanges of a pod): the replay reads them for such a request, and
	// holds it undecided where it does not know them.
	for _, in := range plugininput.Inputs() {
		who := writerPolicy(policies, in.Resource, in.Subresource)
		if who == "" {
			continue
		}
		for _, gr := range in.Reads {
			gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Group: gr.Group, Resource: gr.Resource})
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("%s, which admission plugins read for %s, is not served by the cluster: not in the snapshot (%v)", gr, describe(in.Resource, in.Subresource), err))
				continue
			}
			addRest(gvr, "admission plugins read them for "+describe(in.Resource, in.Subresource)+" ("+who+")")
		}
	}
	if _, ok := restSeen[schema.GroupResource{Resource: "pods"}]; ok {
		// The replay replays a pod's binding over the pods it keeps, and PodTopologyLabels
		// reads the binding's node.
		addRest(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "the nodes pods are bound to")
	}
	sort.SliceStable(rest, func(i, j int) bool {
		return rest[i].GroupResource().String() < rest[j].GroupResource().String()
	})
	return append(resources, rest...), warnings
}

// writerPolicy is the name of a policy one of whose rules matches a create or an update of
// the resource and subresource, or "".
func writerPolicy(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, gvr schema.GroupVersionResource, sub string) string {
	for _, p := range policies {
		if mc := p.Spec.MatchConstraints; mc != nil {
			for _, r := range mc.ResourceRules {
				if plugininput.RuleMatches(r.RuleWithOperations, gvr, sub, "CREATE") || plugininput.RuleMatches(r.RuleWithOperations, gvr, sub, "UPDATE") {
					return p.Name
				}
			}
		}
	}
	return ""
}

// describe names a resource and subresource for people.
func describe(gvr schema.GroupVersionResource, sub string) string {
	if sub != "" {
		return gvr.Resource + "/" + sub
	}
	return gvr.Resource
}

// readsOld says whether a rule's operations include one with an oldObject.
func readsOld(ops []admissionregistrationv1.OperationType) bool {
	for _, op := range ops {
		switch op {
		case admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.OperationAll:
			return true
		}
	}
	return false
}

// versions are the versions of a rule to list by: its first one, or the preferred ("") for a
// wildcard; one version holds every object of a resource.
func versions(vs []string) []string {
	for _, v := range vs {
		if v == "*" {
			return []string{""}
		}
	}
	if len(vs) == 0 {
		return []string{""}
	}
	return vs[:1]
}

// Count is how many objects of a resource a snapshot holds.
type Count struct {
	Resource
	Objects int
	// List is the kind of the API's list of the resource (v1 PodList).
	List schema.GroupVersionKind
	// ResourceVersion is the revision the list was read at (its first page's: the others
	// continue it), which the replay dates the snapshot's objects of the resource by.
	ResourceVersion string
}

// Snapshot is the objects taken, in the order of their resources, and how many of each.
type Snapshot struct {
	Items  []unstructured.Unstructured
	Counts []Count
}

// Client is what Take reads a cluster with.
type Client struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// Discovery, when not nil, lists the cluster's subresources (Subresources).
	Discovery discovery.DiscoveryInterface
}

// Subresources returns the resources the cluster serves with the subresource (deployments for
// scale), in their preferred versions; none without Discovery. err says the groups whose
// discovery failed, when the others' resources are returned.
func (c *Client) Subresources(sub string) (gvrs []schema.GroupVersionResource, err error) {
	if c.Discovery == nil {
		return nil, nil
	}
	lists, err := discovery.ServerPreferredResources(c.Discovery) // what it found, when a group fails
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if base, s, ok := strings.Cut(r.Name, "/"); ok && s == sub {
				gvrs = append(gvrs, gv.WithResource(base))
			}
		}
	}
	return gvrs, err
}

// NewClient returns the Client of a REST config: a dynamic client and a REST mapper from the
// cluster's discovery.
func NewClient(cfg *rest.Config) (*Client, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	return &Client{Dynamic: dyn, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached), Discovery: cached}, nil
}

// pageSize is how many objects one List request asks for.
const pageSize = 500

// Take lists every object of the resources, page by page, without their managedFields (as
// kubectl get shows them).
func (c *Client) Take(ctx context.Context, resources []Resource) (*Snapshot, error) {
	s := &Snapshot{}
	for _, r := range resources {
		n := 0
		var listKind schema.GroupVersionKind
		var rv string
		opts := metav1.ListOptions{Limit: pageSize}
		for {
			list, err := c.Dynamic.Resource(r.GroupVersionResource).List(ctx, opts)
			if err != nil {
				return nil, fmt.Errorf("listing %s (%s): %w", r.GroupResource(), r.Why, err)
			}
			listKind = list.GroupVersionKind()
			if rv == "" {
				rv = list.GetResourceVersion()
			}
			for _, it := range list.Items {
				unstructured.RemoveNestedField(it.Object, "metadata", "managedFields")
				s.Items = append(s.Items, it)
				n++
			}
			if list.GetContinue() == "" {
				break
			}
			opts.Continue = list.GetContinue()
		}
		s.Counts = append(s.Counts, Count{Resource: r, Objects: n, List: listKind, ResourceVersion: rv})
	}
	return s, nil
}

// Write writes the snapshot as YAML documents, one List a resource as the API lists it (a
// v1 PodList; kubectl get -o yaml writes a List of the same items), marked as holding every
// object of the resource (vapc.dev/complete, which the replay reads: replay.CompleteListKey),
// empty or not.
func (s *Snapshot) Write(w io.Writer) error {
	for i, list := range s.lists() {
		data, err := yaml.Marshal(list)
		if err != nil {
			return err
		}
		if i > 0 {
			data = append([]byte("---\n"), data...)
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the snapshot as Write does, each List a JSON document of its own line
// instead of YAML: a replay reads JSON documents' objects on every core at the speed of the
// audit log's (replay's loadJSONListFile), about twice as fast as YAML, which it converts with
// sigs.k8s.io/yaml (a snapshot of 5,266 objects, 27 MB: 1.1 against 1.9 s to a replay's first
// event). A JSON document is YAML too: a tool that reads YAML reads it.
func (s *Snapshot) WriteJSON(w io.Writer) error {
	for _, list := range s.lists() {
		data, err := json.Marshal(list)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(data, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// lists are the documents of the snapshot: a List a resource, as the API lists it, empty or
// not.
func (s *Snapshot) lists() []map[string]any {
	var lists []map[string]any
	at := 0
	for _, c := range s.Counts {
		items := make([]any, c.Objects)
		for j := range items {
			items[j] = s.Items[at+j].Object
		}
		at += c.Objects
		list := map[string]any{
			"apiVersion": c.List.GroupVersion().String(), "kind": c.List.Kind,
			// The revision it was read at: the replay dates the resource's objects by it.
			"metadata": map[string]any{"resourceVersion": c.ResourceVersion},
			"items":    items,
			// Every object of the resource, in every namespace, every page: the replay
			// takes the resource as complete (replay.CompleteListKey).
			"vapc.dev/complete": true,
		}
		if !strings.HasSuffix(c.List.Kind, "List") || c.List.Kind == "List" {
			list = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items}
		}
		lists = append(lists, list)
	}
	return lists
}
