package replay

import (
	"encoding/json"
	"slices"
	"strings"

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
	member := "metadata"
	if j.ev.Verb == "delete" || j.ev.Verb == "deletecollection" {
		member = "preconditions"
	}
	rv := state.ResourceVersion(askedVersion(j.ev.RequestObject, member))
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

// askedVersion is the resourceVersion a request's body asks for: an update's or a patch's in
// the object's metadata, a DELETE's in its DeleteOptions' preconditions (the member named),
// read from the body's top level only as far as that member (an object's metadata comes
// before its spec). "" when the body holds none, or is not an object this reads.
func askedVersion(raw []byte, member string) string {
	s := jsonScan{b: raw}
	var found string
	ok := s.members(func(key string) bool {
		if key != member || s.peek() != '{' {
			return s.skip()
		}
		s.stop = s.members(func(k string) bool {
			if k == "resourceVersion" && s.peek() == '"' {
				v, ok := s.str()
				found = v
				return ok
			}
			return s.skip()
		})
		return s.stop
	})
	if !ok {
		return ""
	}
	return found
}

// jsonScan reads the members of JSON objects without decoding their values.
type jsonScan struct {
	b    []byte
	i    int
	stop bool
}

func (s *jsonScan) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *jsonScan) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// members calls member with each key of the object at the scanner, positioned at its value;
// member reads the value. It stops early, successfully, once stop is set.
func (s *jsonScan) members(member func(key string) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		key, ok := s.str()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		if s.stop {
			return true
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string.
func (s *jsonScan) str() (string, bool) {
	start := s.i
	s.i++
	escaped := false
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '\\':
			escaped = true
			s.i++
		case c == '"':
			s.i++
			raw := s.b[start:s.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), true
			}
			var v string
			err := json.Unmarshal(raw, &v)
			return v, err == nil
		}
	}
	return "", false
}

// skip skips a value: strings whole, objects and arrays to their end.
func (s *jsonScan) skip() bool {
	switch s.peek() {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case 0:
		return false
	}
	for s.i < len(s.b) && !strings.ContainsRune(",}] \t\r\n", rune(s.b[s.i])) {
		s.i++
	}
	return true
}
