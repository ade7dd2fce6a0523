package export

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// A GKE entry does not carry the request URI's query, and with it whether the request was a
// dry run (?dryRun=All: kubectl diff, --dry-run=server), which decides whether the write
// happened. The response of a successful write shows it where kube-apiserver's storage does:
//   - a dry-run create stores nothing, and its object has no resourceVersion; a create's always
//     has one (etcd3's store sets it);
//   - an update whose object gives a resourceVersion (a precondition: the store refuses it
//     unless the object has that version, registry.Store.Update) and that answered with
//     another was stored: a dry run answers with the object it would store, at the version the
//     precondition gave (DryRunnableStorage.GuaranteedUpdate sets none), and so does a no-op.
//     A scale subresource's update gives its parent's version the same way.
//
//   - a patch whose body gives a resourceVersion sets the patched object's, which the store
//     compares as an update's: answered with another, it was stored.
//
// Nothing else tells: an update with the same version, or without one (or with "0", which asks
// for none: the store takes the object's, and a dry run answers with it), may have been a dry
// run or a no-op, and a patch without one answers a dry run with the version the object has,
// which the entry does not show. Otherwise the event keeps auditlog.LostDryRun, and the replay holds
// request.dryRun unknown.

// dryCheck is what an entry's event shows of a create, an update or a patch: the
// resourceVersion of its response, the one its body gave (a precondition), and its request URI.
type dryCheck struct {
	rv, uri string
	// conditional says the write is an update or a patch whose body gave the version it had
	// to find (requested): stored when that and its response's differ.
	conditional bool
	requested   string
}

// dryCheckOf is the dryCheck of a successful write whose response is its object.
func dryCheckOf(ev *gkeEvent) *dryCheck {
	if ev.ObjectRef == nil || ev.ResponseStatus == nil ||
		ev.ResponseStatus.Code < 200 || ev.ResponseStatus.Code >= 300 || ev.Stage != auditlog.StageResponseComplete {
		return nil
	}
	switch sub := ev.ObjectRef.Subresource; {
	case ev.Verb == "create" && sub == "":
	case (ev.Verb == "update" || ev.Verb == "patch") && (sub == "" || sub == "status" || sub == "scale"):
	default:
		return nil
	}
	h, ok := objectHeaderOf(ev.ResponseObject)
	if !ok || h.kind == "Status" || h.name == "" {
		return nil
	}
	c := &dryCheck{rv: h.rv, uri: ev.RequestURI}
	if ev.Verb == "update" || ev.Verb == "patch" {
		// The body's metadata.resourceVersion: an update's object's, a merge or apply patch's
		// (which need give no kind); a JSON patch's (an array) is not read, and stays unknown.
		requested := ""
		if body := bytes.TrimSpace(ev.RequestObject); len(body) > 0 && body[0] == '{' {
			requested = auditlog.MemberString(body, "metadata", "resourceVersion")
		}
		if requested == "" || h.rv == "" {
			return nil // no precondition, or no version answered: nothing shows it
		}
		c.conditional, c.requested = true, requested
	}
	return c
}

// objectHeaderOf is what a dryCheck reads of an event's object; false when there is none, or
// it is not an object.
func objectHeaderOf(obj []byte) (objectHeader, bool) {
	if !hasObject(obj) {
		return objectHeader{}, false
	}
	if h, ok := headerOf(obj); ok {
		return h, true
	}
	u, err := auditlog.DecodeHeader(obj)
	if err != nil {
		return objectHeader{}, false
	}
	return objectHeader{kind: u.GetKind(), name: u.GetName(), namespace: u.GetNamespace(), rv: u.GetResourceVersion()}, true
}

// objectHeader is what a dryCheck reads of a response's object.
type objectHeader struct{ kind, name, namespace, rv string }

// headerOf reads an object's kind and metadata's name, namespace and resourceVersion in one
// walk that stops once it has read both (the replay's decoder checks the object in full);
// false when it cannot (auditlog.DecodeHeader then decodes them).
func headerOf(obj []byte) (h objectHeader, ok bool) {
	kind, metadata := false, false
	walkObject(obj, 0, func(k []byte, _, start int) (int, bool) {
		switch string(k) {
		case "kind":
			end, ok := valueEnd(obj, start)
			kind = ok && unquoteTo(obj[start:end], &h.kind)
			return end, kind && !metadata
		case "metadata":
			end, ok := walkObject(obj, start, func(k []byte, _, start int) (int, bool) {
				var to *string
				switch string(k) {
				case "name":
					to = &h.name
				case "namespace":
					to = &h.namespace
				case "resourceVersion":
					to = &h.rv
				default:
					return -1, true
				}
				end, ok := valueEnd(obj, start)
				return end, ok && unquoteTo(obj[start:end], to)
			})
			metadata = ok
			return end, metadata && !kind
		}
		return -1, true
	})
	return h, kind && metadata
}

// dryRuns settles, from their responses, whether creates, updates and patches were dry runs.
type dryRuns struct{}

func newDryRuns() *dryRuns { return &dryRuns{} }

// settle says whether a create was a dry run, from its response (the event's URI then says so,
// ?dryRun=All), or that an update or a patch was none; the event no longer loses it. One
// answered with the version its precondition gave stays unknown.
func (d *dryRuns) settle(rec *record) {
	if !rec.loss.Lost.Has(auditlog.LostDryRun) {
		return // known already (GKE's label)
	}
	c := rec.dry
	if c.conditional {
		// Versions as the store compares them (a number: "042" is 42).
		req, err1 := strconv.ParseUint(c.requested, 10, 64)
		resp, err2 := strconv.ParseUint(c.rv, 10, 64)
		if err1 == nil && err2 == nil && req != 0 && req != resp {
			rec.loss.Lost &^= auditlog.LostDryRun
		}
		return
	}
	if c.rv == "" {
		old, _ := json.Marshal(c.uri)
		uri, _ := json.Marshal(c.uri + "?dryRun=All")
		marked := bytes.Replace(rec.data, append([]byte(`"requestURI":`), old...), append([]byte(`"requestURI":`), uri...), 1)
		if bytes.Equal(marked, rec.data) {
			return // the event does not say so: it stays unknown
		}
		rec.data = marked
	}
	rec.loss.Lost &^= auditlog.LostDryRun
}
