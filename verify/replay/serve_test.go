package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
)

// TestOverlayUnknown: an update's body gives the pipeline the values of the stored object the
// State does not know, so that it validates the update as the server did; known fields stay.
func TestOverlayUnknown(t *testing.T) {
	t.Parallel()
	volumeNames := []vapccel.Unknown{
		{Path: objectPath("spec", "volumes", vapccel.AnyStep, "name")},
		{Path: objectPath("spec", "containers", vapccel.AnyStep, "volumeMounts", vapccel.AnyStep, "name")},
	}
	for _, tc := range []struct {
		name         string
		stored, body string
		unknowns     []vapccel.Unknown
		want         string
	}{{
		name:     "the token volume's suffix",
		stored:   `{"spec":{"volumes":[{"name":"kube-api-access-aaaaa"}],"containers":[{"name":"c","image":"x","volumeMounts":[{"name":"kube-api-access-aaaaa"}]}]}}`,
		body:     `{"spec":{"volumes":[{"name":"kube-api-access-bbbbb"}],"containers":[{"name":"c","image":"y","volumeMounts":[{"name":"kube-api-access-bbbbb"}]}]}}`,
		unknowns: volumeNames,
		want:     `{"spec":{"volumes":[{"name":"kube-api-access-bbbbb"}],"containers":[{"name":"c","image":"x","volumeMounts":[{"name":"kube-api-access-bbbbb"}]}]}}`,
	}, {
		name:     "lists of other lengths are left",
		stored:   `{"spec":{"volumes":[{"name":"a"},{"name":"b"}]}}`,
		body:     `{"spec":{"volumes":[{"name":"c"}]}}`,
		unknowns: volumeNames,
		want:     `{"spec":{"volumes":[{"name":"a"},{"name":"b"}]}}`,
	}, {
		name:     "metadata is the request's own business",
		stored:   `{"metadata":{"uid":"1"},"status":{"phase":"Pending"}}`,
		body:     `{"metadata":{"uid":"2"},"status":{"phase":"Running"}}`,
		unknowns: []vapccel.Unknown{{Path: objectPath("metadata", "uid")}, {Path: objectPath("status", "phase")}},
		want:     `{"metadata":{"uid":"1"},"status":{"phase":"Running"}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want any
			if err := json.Unmarshal(overlayUnknown([]byte(tc.stored), []byte(tc.body), tc.unknowns), &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("overlayUnknown (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJobLabelVariants: a Job create logged with its template's labels is sent both with and
// without them, unless the Job the server returned says which it was.
func TestJobLabelVariants(t *testing.T) {
	t.Parallel()
	const tmpl = `"spec":{"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"i"}]}},"backoffLimit":9007199254740993}`
	same := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","labels":{"app":"x"}},` + tmpl + `}`
	without := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},` + tmpl + `}`
	other := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","labels":{"app":"y"}},` + tmpl + `}`
	created := func(labels string) *Event {
		return &Event{ResponseStatus: &Status{Code: 201}, ResponseObject: json.RawMessage(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","labels":` + labels + `}}`)}
	}
	for _, tc := range []struct {
		name string
		body string
		ev   *Event
		want []string // the bodies sent, as canonical JSON
	}{
		{"labels of the template, refused", same, &Event{ResponseStatus: &Status{Code: 422}}, []string{same, without}},
		{"other labels", other, &Event{ResponseStatus: &Status{Code: 422}}, []string{other}},
		{"created with defaulted labels", same, created(`{"app":"x","batch.kubernetes.io/controller-uid":"u"}`), []string{without}},
		{"created with the labels sent", same, created(`{"app":"x"}`), []string{same}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range jobLabelVariants([]byte(tc.body), tc.ev) {
				got = append(got, canonicalJSON(t, v.body))
			}
			var want []string
			for _, b := range tc.want {
				want = append(want, canonicalJSON(t, []byte(b)))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("bodies (-want +got):\n%s", diff)
			}
		})
	}
}

func canonicalJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestSortManagedFields: entries ordered as the field manager encodes them once their times
// are the server's: by operation, the second, the manager.
func TestSortManagedFields(t *testing.T) {
	t.Parallel()
	at := func(sec int64) *metav1.Time { tm := metav1.Unix(sec, 0); return &tm }
	mfs := []metav1.ManagedFieldsEntry{
		{Manager: "vapc-e2e", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(10)},
		{Manager: "vapc-e2e", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(20), Subresource: "status"},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(20)},
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, Time: at(30)},
	}
	sortManagedFields(mfs)
	var got []string
	for _, e := range mfs {
		got = append(got, e.Manager+"/"+string(e.Operation)+"/"+e.Subresource)
	}
	want := []string{"kubectl/Apply/", "vapc-e2e/Update/", "kube-controller-manager/Update/", "vapc-e2e/Update/status"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// TestShortenedGrace: a request that shortens a pending deletion's grace period moves its
// deletionTimestamp back, unless that is before the server's clock (then the clock and one
// second): the replay, whose own clock reads long after the log, puts back the server's way.
func TestShortenedGrace(t *testing.T) {
	t.Parallel()
	pod := func(ts string, grace int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "namespace": "ns", "deletionTimestamp": ts, "deletionGracePeriodSeconds": grace}}}
		return u
	}
	before, err := pod("2026-11-24T05:24:32Z", 30).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	eviction := func(grace int64) map[string]any {
		return map[string]any{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": map[string]any{"name": "p", "namespace": "ns"},
			"deleteOptions": map[string]any{"gracePeriodSeconds": grace}}
	}
	for _, tc := range []struct {
		name               string
		sub                string
		uri                string
		body               map[string]any
		received, done     string
		beforeUnknown      string // a field of the deletion before that is not known
		pipelineGrace      int64  // the grace period the pipeline made by its own clock (1 unless set)
		wantTS             string
		wantGrace          int64
		wantUnknownsFields int
	}{
		{name: "moved back, after the clock", sub: "eviction", body: eviction(10), received: "05:24:10.916", done: "05:24:10.920",
			wantTS: "2026-11-24T05:24:12Z", wantGrace: 10},
		{name: "moved back before the clock", sub: "eviction", body: eviction(10), received: "05:24:20.100", done: "05:24:20.200",
			wantTS: "2026-11-24T05:24:20Z", wantGrace: 1},
		{name: "before the clock, which the log does not hold to the second", sub: "eviction", body: eviction(10), received: "05:24:20.900", done: "05:24:21.200",
			wantTS: "2030-01-01T00:00:01Z", wantGrace: 1, wantUnknownsFields: 1},
		{name: "while the clock read", sub: "eviction", body: eviction(10), received: "05:24:11.900", done: "05:24:12.100",
			wantTS: "2030-01-01T00:00:01Z", wantGrace: 1, wantUnknownsFields: 2},
		{name: "a DELETE's query", uri: "?gracePeriodSeconds=5", received: "05:24:00.000", done: "05:24:00.001",
			wantTS: "2026-11-24T05:24:07Z", wantGrace: 5},
		{name: "not shorter", sub: "eviction", body: eviction(30), received: "05:24:10.916", done: "05:24:10.920",
			wantTS: "2030-01-01T00:00:01Z", wantGrace: 1},
		// A pipeline whose clock read before the log's took the first way: the server's second.
		{name: "moved back before the clock, the pipeline's after", sub: "eviction", body: eviction(10), received: "05:24:20.100", done: "05:24:20.200",
			pipelineGrace: 10, wantTS: "2026-11-24T05:24:20Z", wantGrace: 1},
		{name: "the deletion's timestamp not known", sub: "eviction", body: eviction(10), received: "05:24:10.916", done: "05:24:10.920",
			beforeUnknown: "deletionTimestamp", wantTS: "2030-01-01T00:00:01Z", wantGrace: 1, wantUnknownsFields: 2},
		{name: "the deletion's timestamp not known, not shorter", sub: "eviction", body: eviction(30), received: "05:24:10.916", done: "05:24:10.920",
			beforeUnknown: "deletionTimestamp", wantTS: "2030-01-01T00:00:01Z", wantGrace: 1},
		{name: "the deletion's grace period not known", sub: "eviction", body: eviction(30), received: "05:24:10.916", done: "05:24:10.920",
			beforeUnknown: "deletionGracePeriodSeconds", wantTS: "2030-01-01T00:00:01Z", wantGrace: 1, wantUnknownsFields: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Event{Verb: "delete", RequestURI: "/api/v1/namespaces/ns/pods/p" + tc.uri,
				RequestReceivedTimestamp: "2026-11-24T" + tc.received + "Z", StageTimestamp: "2026-11-24T" + tc.done + "Z"}
			tg := target{op: admission.Delete, sub: tc.sub, namespace: "ns", name: "p"}
			if tc.body != nil {
				ev.Verb, tg.op = "create", admission.Create
				ev.RequestObject, _ = json.Marshal(tc.body)
			}
			grace := tc.pipelineGrace
			if grace == 0 {
				grace = 1
			}
			u := pod("2030-01-01T00:00:01Z", grace) // what the pipeline made with its own clock
			var beforeUnknowns []vapccel.Unknown
			if tc.beforeUnknown != "" {
				beforeUnknowns = []vapccel.Unknown{{Path: objectPath("metadata", tc.beforeUnknown), ValueOnly: true, Why: "marked by a deletecollection"}}
			}
			unknowns := shortenedGrace(u, before, beforeUnknowns, ev, tg)
			got := fmt.Sprintf("%s %d %d", u.GetDeletionTimestamp().UTC().Format(time.RFC3339), *u.GetDeletionGracePeriodSeconds(), len(unknowns))
			if want := fmt.Sprintf("%s %d %d", tc.wantTS, tc.wantGrace, tc.wantUnknownsFields); got != want {
				t.Errorf("deletionTimestamp, grace, unknowns = %s, want %s", got, want)
			}
		})
	}
}

// TestResultKey: results that differ in any field of verify.Result but their audit
// annotations (which join, see TestCombineCalls) have different keys, so that a request's
// results are given once each without two distinct ones merged (a field added to Result and
// not to keyOf fails here).
func TestResultKey(t *testing.T) {
	t.Parallel()
	rt := reflect.TypeOf(verify.Result{})
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Name == "AuditAnnotations" {
			continue
		}
		var r verify.Result
		v := reflect.ValueOf(&r).Elem().Field(i)
		switch f.Type.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
		case reflect.Map:
			v.Set(reflect.MakeMap(f.Type))
			v.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf("v"))
		default:
			t.Fatalf("field %s of kind %s: teach the test to set it", f.Name, f.Type.Kind())
		}
		if keyOf(r) == keyOf(verify.Result{}) {
			t.Errorf("keyOf does not tell results apart by %s", f.Name)
		}
	}
}

// TestCombineCalls: a request admitted twice (an immediate DELETE, before and after the
// store marks the object deleted) gives each outcome once where one admission gave audit
// annotations the other did not: joined (seed c:901); an outcome whose annotations have other
// values (a deletecollection's objects, each named by its binding's annotation), or another
// outcome, is given too; the admissions' own results are not changed.
func TestCombineCalls(t *testing.T) {
	t.Parallel()
	param := &verify.ParamRef{Namespace: "ns", Name: "p"}
	fail := func(annotations map[string]string) verify.Result {
		return verify.Result{Policy: "p", Binding: "b", Param: param, Result: verify.ResultDeny, Message: "m", Actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}, AuditAnnotations: annotations}
	}
	other := fail(nil)
	other.Message = "n"
	first := &verify.Decision{Results: []verify.Result{fail(map[string]string{"k1": "keys"})}}
	second := &verify.Decision{Results: []verify.Result{fail(nil), fail(map[string]string{"k1": "keys", "k2": "v"}), fail(map[string]string{"k1": "other"}), other}}
	got := combineCalls("delete", []admitted{{dec: first}, {dec: second}})
	want := []verify.Result{fail(map[string]string{"k1": "keys", "k2": "v"}), fail(map[string]string{"k1": "other"}), other}
	if diff := cmp.Diff(want, got.Results); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"k1": "keys"}, first.Results[0].AuditAnnotations); diff != "" {
		t.Errorf("the first admission's result changed (-want +got):\n%s", diff)
	}
}

// TestPatchVariants: the content types a PATCH may have been sent as, which the audit log does
// not record: a JSON array is a JSON patch; an object holding a strategic merge patch's
// directive (the kubelet's status patches carry $setElementOrder) was written by a strategic
// merge patch generator; another object is a merge or a strategic merge patch, or an apply.
func TestPatchVariants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, query string
		want              []types.PatchType
	}{
		{"json patch", `[{"op":"add","path":"/spec/unschedulable","value":true}]`, "", []types.PatchType{types.JSONPatchType}},
		{"an object", `{"spec":{"unschedulable":true}}`, "", []types.PatchType{types.MergePatchType, types.StrategicMergePatchType}},
		{"the kubelet's status patch", `{"status":{"$setElementOrder/conditions":[{"type":"Ready"}],"conditions":[{"type":"Ready","status":"True"}]}}`, "", []types.PatchType{types.StrategicMergePatchType}},
		{"a list element deleted", `{"spec":{"containers":[{"name":"c","$patch":"delete"}]}}`, "", []types.PatchType{types.StrategicMergePatchType}},
		{"retain keys", `{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}`, "", []types.PatchType{types.StrategicMergePatchType}},
		{"a value that looks like a directive", `{"data":{"k":"\"$patch\": delete"}}`, "", []types.PatchType{types.MergePatchType, types.StrategicMergePatchType}},
		{"an apply", `{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"v"}}`, "?fieldManager=m", []types.PatchType{types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType}},
		{"a forced apply", `{"apiVersion":"v1","kind":"ConfigMap"}`, "?fieldManager=m&force=true", []types.PatchType{types.ApplyYAMLPatchType}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Event{RequestURI: "/api/v1/namespaces/ns/configmaps/c" + tc.query}
			if got := patchVariants([]byte(tc.body), ev); !slices.Equal(got, tc.want) {
				t.Errorf("patchVariants(%s) = %v, want %v", tc.body, got, tc.want)
			}
		})
	}
}
