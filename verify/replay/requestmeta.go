package replay

import (
	"bytes"
	"encoding/json"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// isMeta says whether an unknown is the stored object's metadata field (resourceVersion, uid).
func isMeta(u vapccel.Unknown, field string) bool {
	return len(u.Path.Steps) == 2 && u.Path.Steps[0] == "metadata" && u.Path.Steps[1] == field
}

// unknownMeta says whether the stored object's metadata field is among the unknowns.
func unknownMeta(unknowns []vapccel.Unknown, field string) bool {
	return slices.ContainsFunc(unknowns, func(u vapccel.Unknown) bool { return isMeta(u, field) })
}

// askedFor narrows the versions of its object the job's request may have read to those an
// attempt that reached admission may have read, given the resourceVersion it asked for
// (state.Prior.AskedFor); for a request the log shows reached admission (it succeeded, or a
// policy refused it), to the one it asked for (state.Prior.AdmittedOn). Only a prior with
// another version, or with one whose resourceVersion the State knows, costs reading the body.
func (j *job) askedFor() {
	reached := j.reachedAdmission()
	if !j.prior.OtherVersionRead() && !(reached && j.prior.RV != 0 && j.prior.Raw != nil) {
		return
	}
	rv := askedVersion(j.ev)
	if reached {
		j.prior = j.prior.AdmittedOn(rv)
	}
	j.prior = j.prior.AskedFor(rv)
}

// reachedAdmission says whether the log shows the job's request reached validating admission
// on its last attempt: it succeeded, or a policy refused it.
func (j *job) reachedAdmission() bool {
	c := j.ev.Code()
	return c >= 200 && c < 300 || j.rec.policy != ""
}

// requestMeta is the resourceVersion and uid a request asked for: its object's, or a
// DELETE's preconditions (see askedVersion).
func requestMeta(ev *Event) (version, uid string) {
	if version, ok := jsonPatchMeta(ev, resourceVersionPath); ok {
		uid, _ = jsonPatchMeta(ev, uidPath)
		return version, uid
	}
	member := askedMember(ev)
	return auditlog.MemberString(ev.RequestObject, member, "resourceVersion"), auditlog.MemberString(ev.RequestObject, member, "uid")
}

// fromRequest are the resourceVersion and uid of a stored object the replay does not know
// (unknowns) that a request the storage let through asked for.
func fromRequest(ev *Event, unknowns []vapccel.Unknown) (version, uid string) {
	unknownVersion, unknownUID := unknownMeta(unknowns, "resourceVersion"), unknownMeta(unknowns, "uid")
	if !unknownVersion && !unknownUID {
		return "", ""
	}
	version, uid = requestMeta(ev)
	if !unknownVersion {
		version = ""
	}
	if !unknownUID {
		uid = ""
	}
	return version, uid
}

// knownFrom drops the resourceVersion and uid from unknowns when a request gave them.
func knownFrom(unknowns []vapccel.Unknown, version, uid string) []vapccel.Unknown {
	if version == "" && uid == "" {
		return unknowns
	}
	return slices.DeleteFunc(slices.Clone(unknowns), func(u vapccel.Unknown) bool {
		return version != "" && isMeta(u, "resourceVersion") || uid != "" && isMeta(u, "uid")
	})
}

// withMeta is a stored object's JSON with another resourceVersion and uid (when not empty).
func withMeta(raw []byte, version, uid string) []byte {
	u, err := auditlog.DecodeObject(raw)
	if err != nil {
		return raw
	}
	if version != "" {
		u.SetResourceVersion(version)
	}
	if uid != "" {
		u.SetUID(types.UID(uid))
	}
	out, err := u.MarshalJSON()
	if err != nil {
		return raw
	}
	return out
}

// updateBody is the body of an update (the whole object, as the client read it) when the State
// does not know some fields of the stored object, for overlayUnknown.
func updateBody(ev *Event, unknowns []vapccel.Unknown) []byte {
	if ev.Verb != "update" || len(unknowns) == 0 || !hasBody(ev.RequestObject) {
		return nil
	}
	return ev.RequestObject
}

// overlayUnknown is a stored object's JSON with the values an update's body holds where the
// State does not know them (the random suffix of a pod's token volume, the clock): the client
// sent back what it read, and the log shows the server let the update through its validation,
// which holds immutable fields to the stored values. The fields stay unknown in the request's
// oldObject; this only lets the pipeline validate the update as the server did.
func overlayUnknown(raw, body []byte, unknowns []vapccel.Unknown) []byte {
	var stored, sent map[string]any
	if json.Unmarshal(raw, &stored) != nil || json.Unmarshal(body, &sent) != nil {
		return raw
	}
	for _, u := range unknowns {
		if u.Path.Root == "object" && len(u.Path.Steps) > 0 && u.Path.Steps[0] != "metadata" {
			overlayPath(stored, sent, u.Path.Steps)
		}
	}
	out, err := json.Marshal(stored)
	if err != nil {
		return raw
	}
	return out
}

// overlayPath copies the value at steps from sent into stored, element by element of lists of
// the same length (AnyStep).
func overlayPath(stored, sent any, steps []string) {
	switch s := stored.(type) {
	case map[string]any:
		b, ok := sent.(map[string]any)
		if !ok || steps[0] == vapccel.AnyStep {
			return
		}
		v, has := b[steps[0]]
		if !has {
			return
		}
		if len(steps) == 1 {
			s[steps[0]] = v
			return
		}
		if _, ok := s[steps[0]]; ok {
			overlayPath(s[steps[0]], v, steps[1:])
		}
	case []any:
		b, ok := sent.([]any)
		if !ok || steps[0] != vapccel.AnyStep || len(b) != len(s) {
			return
		}
		for i := range s {
			if len(steps) == 1 {
				s[i] = b[i]
			} else {
				overlayPath(s[i], b[i], steps[1:])
			}
		}
	}
}

// askedVersion is the resourceVersion a request asks for, which the store checks before
// admission (requestMeta's); 0 for none. A JSON patch asks for it with an operation that sets
// /metadata/resourceVersion (kubectl apply --server-side's migration of a client-side apply's
// fields).
func askedVersion(ev *Event) uint64 {
	if version, ok := jsonPatchMeta(ev, resourceVersionPath); ok {
		return state.ResourceVersion(version)
	}
	return state.ResourceVersion(auditlog.MemberString(ev.RequestObject, askedMember(ev), "resourceVersion"))
}

// jsonPatchMeta is the value a JSON patch gives the metadata field at path (resourceVersionPath,
// uidPath): the one it writes ("replace", "add"), which the update's precondition asks for, or
// the one it tests ("test"), which a patch the server applied found; ok says the request is a
// JSON patch (the value "" where it gives none).
func jsonPatchMeta(ev *Event, path []byte) (value string, ok bool) {
	body := bytes.TrimSpace(ev.RequestObject)
	if ev.Verb != "patch" || len(body) == 0 || body[0] != '[' {
		return "", false
	}
	if !bytes.Contains(body, path) {
		return "", true // decoded only where it may give one
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal(body, &ops) != nil {
		return "", true
	}
	for _, op := range ops {
		var v string
		if (op.Op == "replace" || op.Op == "add" || op.Op == "test") && op.Path == string(path) && json.Unmarshal(op.Value, &v) == nil {
			value = v
		}
	}
	return value, true
}

// resourceVersionPath and uidPath are the paths of a JSON patch's operations that ask for a
// resourceVersion and a uid.
var (
	resourceVersionPath = []byte("/metadata/resourceVersion")
	uidPath             = []byte("/metadata/uid")
)

// askedMember is the member of a request's body that says what version of its object it asks
// for: an update's or a patch's object's metadata, a DELETE's DeleteOptions' preconditions. The
// body is read only as far as it (auditlog.MemberString).
func askedMember(ev *Event) string {
	if ev.Verb == "delete" || ev.Verb == "deletecollection" {
		return "preconditions"
	}
	return "metadata"
}
