package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Object sources: where the object of a rebuilt request came from.
const (
	SourceResponse   = "responseObject" // the stored result the server returned
	SourceRequest    = "requestObject"  // the request body, before defaulting and mutating admission
	SourcePatched    = "patched"        // the patch applied to the prior state
	SourceState      = "state"          // the replay's state store
	SourceRequestURI = "requestURI"     // connect options rebuilt from the request URI
	SourceUnknown    = "unknown"        // not known: the decision did not depend on it
	SourcePipeline   = "apiserver"      // kube-apiserver's request pipeline, from the logged request
)

// patchKind names how a PATCH body is applied; the audit log does not record its content type.
type patchKind string

const (
	patchJSON      patchKind = "json"
	patchMerge     patchKind = "merge"
	patchStrategic patchKind = "strategic-merge"
	patchApply     patchKind = "apply"
)

// guessPatchKind tells the patch types apart from the body and the query: a JSON array is a
// JSON patch, a force parameter (valid only for apply) or a whole object with apiVersion and
// kind sent with a fieldManager is server-side apply, and $-directives are strategic merge.
// Otherwise the body is a merge or a strategic merge patch; ambiguous is true.
func guessPatchKind(body []byte, q url.Values) (k patchKind, ambiguous bool) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return patchJSON, false
	}
	if q.Has("force") {
		return patchApply, false
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err == nil {
		if _, ok := top["apiVersion"]; ok {
			if _, ok := top["kind"]; ok && q.Get("fieldManager") != "" && !bytes.Contains(body, []byte(`"$`)) {
				return patchApply, false
			}
		}
	}
	if bytes.Contains(body, []byte(`"$patch"`)) || bytes.Contains(body, []byte(`"$setElementOrder/`)) ||
		bytes.Contains(body, []byte(`"$retainKeys"`)) || bytes.Contains(body, []byte(`"$deleteFromPrimitiveList/`)) {
		return patchStrategic, false
	}
	return patchMerge, true
}

// applyPatch applies a PATCH body to the prior state as the apiserver's patcher would. For a
// body that could be a merge or a strategic merge patch of a built-in kind, both are applied
// and must agree; otherwise the result is indeterminate.
func applyPatch(old *unstructured.Unstructured, body []byte, q url.Values) (*unstructured.Unstructured, string, error) {
	oldJSON, err := old.MarshalJSON()
	if err != nil {
		return nil, "", err
	}
	gvk := old.GroupVersionKind()
	kind, ambiguous := guessPatchKind(body, q)
	var out []byte
	switch kind {
	case patchJSON:
		p, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil, "", fmt.Errorf("JSON patch: %v", err)
		}
		if out, err = p.Apply(oldJSON); err != nil {
			return nil, "", fmt.Errorf("JSON patch: %v", err)
		}
	case patchApply:
		return nil, "", fmt.Errorf("server-side apply: vapc does not reproduce field management")
	case patchStrategic:
		if out, err = strategic(oldJSON, body, gvk); err != nil {
			return nil, "", err
		}
	case patchMerge:
		merged, err := jsonpatch.MergePatch(oldJSON, body)
		if err != nil {
			return nil, "", fmt.Errorf("merge patch: %v", err)
		}
		out = merged
		if ambiguous && clientgoscheme.Scheme.Recognizes(gvk) {
			smp, err := strategic(oldJSON, body, gvk)
			if err != nil || !jsonEqual(smp, merged) {
				return nil, "", fmt.Errorf("the patch gives different objects as a merge and as a strategic merge patch, and the audit log does not record its content type")
			}
			kind = "merge or strategic-merge"
		}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(out); err != nil {
		return nil, "", fmt.Errorf("patched object: %v", err)
	}
	return u, SourcePatched + " (" + string(kind) + " patch on the prior state)", nil
}

func strategic(oldJSON, body []byte, gvk schema.GroupVersionKind) ([]byte, error) {
	typed, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("strategic merge patch of %s: not a built-in kind", gvk.Kind)
	}
	out, err := strategicpatch.StrategicMergePatch(oldJSON, body, typed)
	if err != nil {
		return nil, fmt.Errorf("strategic merge patch: %v", err)
	}
	return out, nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
