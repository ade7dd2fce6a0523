package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/storage/names"
	api "k8s.io/kubernetes/pkg/apis/core"
	saplugin "k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// What kube-apiserver's pipeline sets on a request's object from something a log does not
// hold: the uid it generates, its clock, the name it generates, the service addresses it
// allocates, the suffix of the ServiceAccount plugin's token volume. The replay's pipeline
// sets them too, from its own clock and generators; settle puts the server's values back
// where the log holds them, and returns the fields it does not: a decision stands only if no
// policy reads them (cel.Reads.DependsOn).

// clientTime says whether the request's body (as the log holds it) writes the time of a
// managedFields entry: the client wrote the entry with its time (a JSON patch or an update of
// metadata.managedFields), which the field manager keeps, not the server's clock (helper exY:
// a test's patch put an entry back at an earlier second, which a later write's field manager
// ordered the entries by).
func clientTime(body []byte, t metav1.Time) bool {
	return len(body) > 0 && bytes.Contains(body, []byte(`"`+t.UTC().Format(time.RFC3339)+`"`))
}

// settle fixes what it can of the admission's objects and returns the fields that stay
// unknown. body is the logged request object.
func settle(ev *Event, t target, a admission.Attributes, body []byte) []vapccel.Unknown {
	var out []vapccel.Unknown
	obj := a.GetObject()
	if obj == nil || t.op == admission.Connect {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	second, known := serverSecond(ev)
	setTime := func(tm *metav1.Time, path vapccel.FieldPath) {
		if known {
			*tm = second
		} else {
			out = append(out, timeUnknown(path))
		}
	}
	var old metav1.Object
	if o := a.GetOldObject(); o != nil {
		old, _ = meta.Accessor(o)
	}
	// The admission's operation, not the log's verb: a server-side apply (a patch) creates
	// the object it finds absent, and the server allocates and stamps it as a create's.
	create := a.GetOperation() == admission.Create && old == nil
	if create && m.GetUID() != "" {
		// The uid, and wherever the strategy copied it (a Job's selector and pod labels):
		// the server's where its answer gives it (the store gave the object its uid before
		// admission, and stored it so).
		if uid := answeredUID(ev, m.GetName()); uid != "" {
			replaceStrings(reflect.ValueOf(obj), string(m.GetUID()), uid)
		} else {
			why := "the uid the server generated"
			out = append(out, vapccel.Unknown{Path: objectPath("metadata", "uid"), ValueOnly: true, Why: why})
			out = append(out, copiesOf(obj, t.reqKind, string(m.GetUID()), why)...)
		}
	}
	if ts := m.GetCreationTimestamp(); create && !ts.IsZero() {
		setTime(&ts, objectPath("metadata", "creationTimestamp"))
		m.SetCreationTimestamp(ts)
	}
	// The managers the request wrote get the time of the server's clock.
	if mfs := m.GetManagedFields(); len(mfs) > 0 {
		oldTimes := map[string]bool{}
		if old != nil {
			for _, e := range old.GetManagedFields() {
				if e.Time != nil {
					oldTimes[e.Manager+"\x00"+string(e.Operation)+"\x00"+e.Time.UTC().String()] = true
				}
			}
		}
		changed := false
		for i := range mfs {
			e := &mfs[i]
			if e.Time == nil || oldTimes[e.Manager+"\x00"+string(e.Operation)+"\x00"+e.Time.UTC().String()] {
				continue
			}
			if clientTime(body, *e.Time) {
				continue
			}
			setTime(e.Time, objectPath("metadata", "managedFields", vapccel.AnyStep, "time"))
			changed = true
		}
		if changed {
			if known {
				// The field manager orders the entries by their times: in the server's.
				sortManagedFields(mfs)
			} else if len(mfs) > 1 {
				// One entry has no order to follow.
				out = append(out, vapccel.Unknown{Path: objectPath("metadata", "managedFields"), Why: "the order of the managedFields entries, which follows the server's clock during the request"})
			}
			m.SetManagedFields(mfs)
		}
	}
	if old != nil && len(old.GetManagedFields()) == 0 && t.reqKind == t.mainKind {
		// The log's stored object has no managedFields (an audit policy with
		// omitManagedFields): the field manager's result is not known, nor, for a
		// server-side apply, what it removed.
		why := "the stored object's managedFields, which the log omits"
		out = append(out,
			vapccel.Unknown{Path: objectPath("metadata", "managedFields"), Why: why},
			vapccel.Unknown{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "managedFields"}}, Why: why})
		if isApply(ev) {
			out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "object"}, Why: "a server-side apply over " + why})
		}
	}
	if m.GetGenerateName() != "" && !bodyNamed(body) && create && !generatedNameKnown(ev, m.GetName()) {
		why := "the name the server generated for " + m.GetGenerateName()
		prefix := generatedPrefix(m.GetGenerateName())
		out = append(out,
			vapccel.Unknown{Path: objectPath("metadata", "name"), ValueOnly: true, Why: why, Prefix: prefix},
			vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: []string{"name"}}, ValueOnly: true, Why: why, Prefix: prefix})
		out = append(out, copiesOf(obj, t.reqKind, m.GetName(), why)...)
	}
	switch o := obj.(type) {
	case *api.Service:
		switch oldSvc, _ := a.GetOldObject().(*api.Service); {
		case t.sub != "":
		case create:
			out = append(out, serviceAllocations(o, body)...)
		case oldSvc != nil:
			out = append(out, serviceUpdateAllocations(o, oldSvc, body)...)
		}
	case *api.Pod:
		if create && t.sub == "" && tokenVolumeAdded(o, body) {
			why := "the random suffix of the token volume the ServiceAccount plugin added"
			for _, p := range []vapccel.FieldPath{objectPath("spec", "volumes", vapccel.AnyStep, "name"),
				objectPath("spec", "containers", vapccel.AnyStep, "volumeMounts", vapccel.AnyStep, "name"),
				objectPath("spec", "initContainers", vapccel.AnyStep, "volumeMounts", vapccel.AnyStep, "name")} {
				out = append(out, vapccel.Unknown{Path: p, ValueOnly: true, Why: why, Prefix: tokenVolumePrefix})
			}
		}
	}
	return out
}

// tokenVolumePrefix is how the name of the token volume the ServiceAccount plugin adds begins
// (the base it generates the name from), before the generator's random suffix.
const tokenVolumePrefix = saplugin.ServiceAccountVolumeName + "-"

// generatedPrefix is how a name the server generates from generateName begins: the base, cut
// to leave room for the random suffix (names.SimpleNameGenerator).
func generatedPrefix(base string) string {
	if len(base) > names.MaxGeneratedNameLength {
		base = base[:names.MaxGeneratedNameLength]
	}
	return base
}

// answeredPluginFields are the unknowns the built-in plugins left (the fields they set from
// what the View does not know), but those a successful create's answer gives: a
// PersistentVolumeClaim's storage class, which DefaultStorageClass sets in mutating admission
// and the store keeps (a claim's answer is not its admission object, apiserver.DefaultedOnRead, but for
// the status its read gives it): a helper's claims created moments after their cluster's
// default StorageClass, or where the log does not show it, were undecided while their answers
// held the class. The admission's object gets the answer's value, in every state the replay
// evaluates: in one whose informer did not yet hold the default class, the server's did.
func answeredPluginFields(ev *Event, t target, a admission.Attributes, unknowns []vapccel.Unknown) []vapccel.Unknown {
	class := objectPath("spec", "storageClassName")
	pvc, ok := a.GetObject().(*api.PersistentVolumeClaim)
	if !ok || a.GetOperation() != admission.Create || t.sub != "" {
		return unknowns
	}
	u := answeredObject(ev, "PersistentVolumeClaim", pvc.Name)
	if u == nil {
		return unknowns
	}
	name, found, err := unstructured.NestedString(u.Object, "spec", "storageClassName")
	if err != nil {
		return unknowns
	}
	pvc.Spec.StorageClassName = nil
	if found {
		pvc.Spec.StorageClassName = &name
	}
	return slices.DeleteFunc(slices.Clone(unknowns), func(u vapccel.Unknown) bool { return u.Path.String() == class.String() })
}

// answersWithObject says whether a request succeeded with an object as its logged answer.
func answersWithObject(ev *Event) bool {
	return ev.Code() >= 200 && ev.Code() < 300 && bytes.HasPrefix(bytes.TrimSpace(ev.ResponseObject), []byte("{"))
}

// answeredObject is the object of the kind named name that a successful create answered with
// (its response is the object it stored), or nil.
func answeredObject(ev *Event, kind, name string) *unstructured.Unstructured {
	if !answersWithObject(ev) {
		return nil
	}
	u, err := auditlog.DecodeObject(ev.ResponseObject)
	if err != nil || u.GetKind() != kind || u.GetName() != name {
		return nil
	}
	return u
}

// serviceAllocations are the fields of a Service create that kube-apiserver's allocators set
// before admission (the service registry's BeginCreate) and the request did not give: the
// replay's pipeline allocates from ranges of its own. An address or port the request asks for
// is the one the server allocates, or the server refuses the request before admission; a
// Service of type ExternalName, or headless (clusterIP None), gets no address, and one whose
// type takes no node ports (the replay's pipeline then allocates none either) gets none. The
// cluster's IP families are not known: which the server gives a request that names none, and
// how many, are unknown but for a single-stack request that gives its address.
func serviceAllocations(o *api.Service, body []byte) []vapccel.Unknown {
	why := "the addresses and ports the server allocated"
	var given struct {
		Spec struct {
			ClusterIP           string   `json:"clusterIP"`
			ClusterIPs          []string `json:"clusterIPs"`
			IPFamilies          []string `json:"ipFamilies"`
			IPFamilyPolicy      string   `json:"ipFamilyPolicy"`
			HealthCheckNodePort int32    `json:"healthCheckNodePort"`
			Ports               []struct {
				NodePort int32 `json:"nodePort"`
			} `json:"ports"`
		} `json:"spec"`
	}
	if !hasBody(body) || json.Unmarshal(body, &given) != nil {
		// What the request asked for is not known: every allocation is unknown.
		out := []vapccel.Unknown{{Path: objectPath("spec", "ports", vapccel.AnyStep, "nodePort"), ValueOnly: true, Why: why},
			{Path: objectPath("spec", "healthCheckNodePort"), ValueOnly: true, Why: why}}
		for _, f := range []string{"clusterIP", "clusterIPs", "ipFamilies"} {
			out = append(out, vapccel.Unknown{Path: objectPath("spec", f), Why: why})
		}
		return out
	}
	g := given.Spec
	var out []vapccel.Unknown
	ips := g.ClusterIPs
	if len(ips) == 0 && g.ClusterIP != "" {
		ips = []string{g.ClusterIP}
	}
	singleStack := g.IPFamilyPolicy == "" || g.IPFamilyPolicy == string(api.IPFamilyPolicySingleStack)
	headless := len(ips) > 0 && ips[0] == api.ClusterIPNone
	if o.Spec.Type != api.ServiceTypeExternalName {
		// How many addresses and families a dual-stack request gets depends on the cluster.
		if !headless && len(ips) == 0 {
			out = append(out, vapccel.Unknown{Path: objectPath("spec", "clusterIP"), ValueOnly: true, Why: why})
		}
		if !headless && !(singleStack && len(ips) > 0) {
			// The first address is the one asked for, when one was; a dual-stack request
			// may get a second.
			out = append(out, vapccel.Unknown{Path: objectPath("spec", "clusterIPs"), ValueOnly: singleStack, Why: why})
		}
		if !singleStack || len(g.IPFamilies) == 0 && (headless || len(ips) == 0) {
			out = append(out, vapccel.Unknown{Path: objectPath("spec", "ipFamilies"), ValueOnly: singleStack, Why: "the IP family the cluster gives a Service that names none"})
		}
	}
	for i, p := range o.Spec.Ports {
		if p.NodePort != 0 && (i >= len(g.Ports) || g.Ports[i].NodePort == 0) {
			// A port the server allocated (the paths have no list index: every port's).
			out = append(out, vapccel.Unknown{Path: objectPath("spec", "ports", vapccel.AnyStep, "nodePort"), ValueOnly: true, Why: why})
			break
		}
	}
	if o.Spec.HealthCheckNodePort != 0 && g.HealthCheckNodePort == 0 {
		out = append(out, vapccel.Unknown{Path: objectPath("spec", "healthCheckNodePort"), ValueOnly: true, Why: why})
	}
	return out
}

// serviceUpdateAllocations are the fields of a Service update that kube-apiserver's allocators
// set before admission (the service registry's BeginUpdate: a type changed to NodePort, or
// from ExternalName, a port added) and neither the stored object nor the request gave: the
// replay's pipeline allocates from ranges of its own (a helper's server denied a patch to
// NodePort on the port it allocated, 31956, where the replay admitted it on its own). What
// the update kept of the stored object the replay's pipeline keeps as the server does.
func serviceUpdateAllocations(o, old *api.Service, body []byte) []vapccel.Unknown {
	why := "the addresses and ports the server allocated"
	given := func(v string) bool { return v != "" && strings.Contains(string(body), v) }
	var out []vapccel.Unknown
	if o.Spec.ClusterIP != old.Spec.ClusterIP && o.Spec.ClusterIP != api.ClusterIPNone && !given(`"`+o.Spec.ClusterIP+`"`) {
		out = append(out, vapccel.Unknown{Path: objectPath("spec", "clusterIP"), ValueOnly: true, Why: why})
	}
	for _, ip := range o.Spec.ClusterIPs {
		if !slices.Contains(old.Spec.ClusterIPs, ip) && ip != api.ClusterIPNone && !given(`"`+ip+`"`) {
			out = append(out, vapccel.Unknown{Path: objectPath("spec", "clusterIPs"), Why: why})
			break
		}
	}
	if !slices.Equal(o.Spec.IPFamilies, old.Spec.IPFamilies) && !strings.Contains(string(body), `"ipFamilies"`) {
		out = append(out, vapccel.Unknown{Path: objectPath("spec", "ipFamilies"), Why: "the IP family the cluster gives a Service that names none"})
	}
	kept := map[int32]bool{}
	for _, p := range old.Spec.Ports {
		kept[p.NodePort] = true
	}
	for _, p := range o.Spec.Ports {
		if p.NodePort != 0 && !kept[p.NodePort] && !given(fmt.Sprintf(`"nodePort":%d`, p.NodePort)) {
			out = append(out, vapccel.Unknown{Path: objectPath("spec", "ports", vapccel.AnyStep, "nodePort"), ValueOnly: true, Why: why})
			break
		}
	}
	if h := o.Spec.HealthCheckNodePort; h != 0 && h != old.Spec.HealthCheckNodePort && !given(fmt.Sprintf(`"healthCheckNodePort":%d`, h)) {
		out = append(out, vapccel.Unknown{Path: objectPath("spec", "healthCheckNodePort"), ValueOnly: true, Why: why})
	}
	return out
}

// sortManagedFields orders managedFields entries as kube-apiserver's field manager encodes
// them (sortEncodedManagedFields in k8s.io/apimachinery's managedfields/internal, which is not
// importable): by operation, then time to the second, manager, apiVersion and subresource.
// The replay's field manager ordered them by its own clock; their times are the server's now.
func sortManagedFields(mfs []metav1.ManagedFieldsEntry) {
	seconds := func(e metav1.ManagedFieldsEntry) int64 {
		if e.Time == nil {
			return 0
		}
		return e.Time.Unix()
	}
	sort.SliceStable(mfs, func(i, j int) bool {
		p, q := mfs[i], mfs[j]
		switch {
		case p.Operation != q.Operation:
			return p.Operation < q.Operation
		case seconds(p) != seconds(q):
			return seconds(p) < seconds(q)
		case p.Manager != q.Manager:
			return p.Manager < q.Manager
		case p.APIVersion != q.APIVersion:
			return p.APIVersion < q.APIVersion
		}
		return p.Subresource < q.Subresource
	})
}

// tokenVolumeAdded says whether the ServiceAccount plugin added its token volume, whose name it
// makes random, to a pod whose request did not have it.
func tokenVolumeAdded(p *api.Pod, body []byte) bool {
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, tokenVolumePrefix) && !strings.Contains(string(body), `"`+v.Name+`"`) {
			return true
		}
	}
	return false
}

// bodyNamed says whether the logged request object has a name.
func bodyNamed(body []byte) bool {
	var o struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	return hasBody(body) && json.Unmarshal(body, &o) == nil && o.Metadata.Name != ""
}

// answeredUID is the uid of the object named name that a successful create answered with (its
// response is the object it stored), or "".
func answeredUID(ev *Event, name string) string {
	if !answersWithObject(ev) {
		return ""
	}
	h, err := auditlog.DecodeHeader(ev.ResponseObject)
	if err != nil || h.GetKind() == "Status" || h.GetName() != name {
		return ""
	}
	return string(h.GetUID())
}

// replaceStrings replaces old with new in every string v holds (struct fields, slice and array
// elements, map values), where it can set them: v is a pointer to the object.
func replaceStrings(v reflect.Value, old, new string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			replaceStrings(v.Elem(), old, new)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() { // an API type's fields are (a time's are not)
				replaceStrings(v.Field(i), old, new)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			replaceStrings(v.Index(i), old, new)
		}
	case reflect.Map:
		if v.Type().Elem().Kind() != reflect.String {
			return // a map of structs or lists holds no copy of a uid the strategies make
		}
		for _, k := range v.MapKeys() {
			if s := v.MapIndex(k).String(); strings.Contains(s, old) {
				v.SetMapIndex(k, reflect.ValueOf(strings.ReplaceAll(s, old, new)).Convert(v.Type().Elem()))
			}
		}
	case reflect.String:
		if v.CanSet() && strings.Contains(v.String(), old) {
			v.SetString(strings.ReplaceAll(v.String(), old, new))
		}
	}
}

// generatedNameKnown says whether the log holds the name the server generated: a refusal's
// status names the object. (replayName puts it into the request.)
func generatedNameKnown(ev *Event, name string) bool {
	return ev.ResponseStatus != nil && ev.ResponseStatus.Details != nil && ev.ResponseStatus.Details.Name == name && name != ""
}

// isApply says whether a PATCH was a server-side apply for sure (a force parameter).
func isApply(ev *Event) bool { return ev.Verb == "apply" || ev.Query().Has("force") }

// namedBody returns the request object of a create with generateName with the name the server
// generated, when a refusal's status in the log gives it (named): the create handler then
// creates under that name, as the server did.
func namedBody(ev *Event, body []byte) ([]byte, bool) {
	if ev.Verb != "create" || ev.ResponseStatus == nil || ev.ResponseStatus.Details == nil || ev.ResponseStatus.Details.Name == "" || !hasBody(body) {
		return body, false
	}
	var o map[string]any
	if json.Unmarshal(body, &o) != nil {
		return body, false
	}
	md, _ := o["metadata"].(map[string]any)
	if md == nil {
		return body, false
	}
	if n, _ := md["name"].(string); n != "" {
		return body, false
	}
	gn, _ := md["generateName"].(string)
	if gn == "" || !strings.HasPrefix(ev.ResponseStatus.Details.Name, gn) {
		return body, false
	}
	md["name"] = ev.ResponseStatus.Details.Name
	out, err := json.Marshal(o)
	if err != nil {
		return body, false
	}
	return out, true
}

// storedAfterMutation are the fields of a stored object (the response of a successful create
// or update, which the replay takes as the object admission saw: SourceResponse) that the
// MutatingAdmissionPolicies may not have seen as stored: kube-apiserver sets them after mutating
// admission, before validating admission. A create's generated name (and request.name), uid
// and creationTimestamp (rest.BeforeCreate), its generation and status (the strategy's
// PrepareForCreate); an update's generation and status (PrepareForUpdate). Each is unknown
// where the stored value differs from the one the policies saw as far as the log shows it:
// the request's object of a create or an update (old, the stored object before, for a patch,
// whose body does not name the field). A policy that reads one decides on what the replay
// does not know (cel.Reads.DependsOn): an expression on a generateName create's
// `object.metadata.name` fails there with "no such key".
func storedAfterMutation(ev *Event, t target, stored, old *unstructured.Unstructured) []vapccel.Unknown {
	if stored == nil || t.sub != "" || (t.op != admission.Create && t.op != admission.Update) {
		return nil
	}
	hook := "the strategy's PrepareForUpdate"
	fields := [][]string{{"metadata", "generation"}, {"status"}}
	if t.op == admission.Create {
		hook = "rest.BeforeCreate"
		fields = append(fields, []string{"metadata", "uid"}, []string{"metadata", "creationTimestamp"})
	}
	// seen is the object whose fields the policies saw, where the log shows them.
	var seen *unstructured.Unstructured
	patch := ev.Verb == "patch" || ev.Verb == "apply"
	if patch {
		seen = old
	} else {
		seen = auditlog.DecodeAnyObject(ev.RequestObject)
	}
	why := "kube-apiserver sets it after mutating admission (" + hook + "), and the log shows the object only as stored"
	var out []vapccel.Unknown
	for _, f := range fields {
		// A patch that names the field anywhere (a merge patch's key, a JSON patch's path, an
		// apply configuration's YAML) may have set it.
		if seen != nil && !(patch && bytes.Contains(ev.RequestObject, []byte(f[len(f)-1]))) {
			was, wasFound, _ := unstructured.NestedFieldNoCopy(seen.Object, f...)
			is, isFound, _ := unstructured.NestedFieldNoCopy(stored.Object, f...)
			if wasFound == isFound && equality.Semantic.DeepEqual(was, is) {
				continue
			}
		}
		out = append(out, vapccel.Unknown{Path: objectPath(f...), Why: why})
	}
	if t.op == admission.Create && stored.GetGenerateName() != "" && !bodyNamed(ev.RequestObject) {
		why := "kube-apiserver generates it from generateName " + stored.GetGenerateName() + " after mutating admission (rest.BeforeCreate), and the log shows the object only as stored"
		out = append(out, vapccel.Unknown{Path: objectPath("metadata", "name"), Why: why},
			vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: []string{"name"}}, Why: why})
	}
	return out
}

// beforeNameGenerated runs mutate, the MutatingAdmissionPolicies, on the attributes of a create
// whose body namedBody named as the server did later: kube-apiserver's create handler runs
// mutating admission before rest.BeforeCreate generates the name, so they see neither
// metadata.name nor request.name (a policy's `object.metadata.name` fails with "no such key"),
// and validating admission sees the name (AdmissionToValidateObjectFunc). After them the
// object has the name again, unless a policy gave it one, which the server keeps.
func beforeNameGenerated(a admission.Attributes, mutate func(admission.Attributes) error) error {
	m, err := meta.Accessor(a.GetObject())
	if err != nil || a.GetOperation() != admission.Create || a.GetSubresource() != "" {
		return mutate(a)
	}
	name := m.GetName()
	m.SetName("")
	err = mutate(unnamedAttributes{a})
	if m, merr := meta.Accessor(a.GetObject()); merr == nil && m.GetName() == "" {
		m.SetName(name)
	}
	return err
}

// unnamedAttributes are a create's admission attributes before its name is generated.
type unnamedAttributes struct{ admission.Attributes }

func (unnamedAttributes) GetName() string { return "" }

// copiesOf are the fields of the object, in the version of gvk, whose value is the generated
// value (or holds it): a strategy may copy a generated uid or name into labels and selectors.
func copiesOf(obj runtime.Object, gvk schema.GroupVersionKind, value, why string) []vapccel.Unknown {
	if value == "" {
		return nil
	}
	u := versioned(obj, gvk)
	if u == nil {
		return nil
	}
	var out []vapccel.Unknown
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				walk(c, append(path[:len(path):len(path)], k))
			}
		case []any:
			for _, c := range x {
				walk(c, append(path[:len(path):len(path)], vapccel.AnyStep))
			}
		case string:
			if strings.Contains(x, value) && !(len(path) == 2 && path[0] == "metadata" && (path[1] == "uid" || path[1] == "name")) {
				out = append(out, vapccel.Unknown{Path: objectPath(path...), ValueOnly: true, Why: why})
			}
		}
	}
	walk(u.Object, nil)
	return out
}

// omittedManagedFields are the managedFields of a rebuilt request's objects that the log does
// not hold. kube-apiserver's field manager gives every object of a resource's own kind it
// stores managedFields, and updates them before admission runs: an object the log or the
// State holds without them (an audit policy with omitManagedFields; a snapshot from kubectl
// get, which leaves them out) does not say what admission saw, and a request's body does not
// hold what the field manager made of it. The kinds a subresource derives (a Scale) have none.
func omittedManagedFields(t target, b *rebuilt, old *unstructured.Unstructured) []vapccel.Unknown {
	if t.reqKind != t.mainKind || t.op == admission.Connect {
		return nil
	}
	var out []vapccel.Unknown
	if old != nil && b.oldUnknown.reason == "" && len(old.GetManagedFields()) == 0 {
		out = append(out, vapccel.Unknown{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "managedFields"}},
			Why: "the stored object's managedFields, which the log omits"})
	}
	obj := b.req.Object
	switch {
	case obj == nil || (t.op != admission.Create && t.op != admission.Update):
	case b.objectSource == SourceResponse && len(obj.GetManagedFields()) == 0:
		out = append(out, vapccel.Unknown{Path: objectPath("metadata", "managedFields"), Why: "the stored object's managedFields, which the log omits"})
	case b.objectSource != SourceResponse:
		out = append(out, vapccel.Unknown{Path: objectPath("metadata", "managedFields"), Why: "the managedFields the server's field manager made of the request's body, which the replay does not compute outside the request pipeline"})
	}
	return out
}
