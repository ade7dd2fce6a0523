package replay

import (
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
// (state.Prior.AskedFor). Only a prior with other versions costs the body's decoding.
func (j *job) askedFor() {
	if j.prior.OtherVersionRead() {
		version, _ := requestMeta(j.ev)
		j.prior = j.prior.AskedFor(state.ResourceVersion(version))
	}
}

// requestMeta is the resourceVersion and uid a request asked for: its body's, or a delete's
// preconditions.
func requestMeta(ev *Event) (version, uid string) {
	var o struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
			UID             string `json:"uid"`
		} `json:"metadata"`
		Preconditions *struct {
			ResourceVersion *string `json:"resourceVersion"`
			UID             *string `json:"uid"`
		} `json:"preconditions"`
	}
	if !hasBody(ev.RequestObject) || json.Unmarshal(ev.RequestObject, &o) != nil {
		return "", ""
	}
	version, uid = o.Metadata.ResourceVersion, o.Metadata.UID
	if p := o.Preconditions; p != nil {
		if p.ResourceVersion != nil {
			version = *p.ResourceVersion
		}
		if p.UID != nil {
			uid = *p.UID
		}
	}
	return version, uid
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
