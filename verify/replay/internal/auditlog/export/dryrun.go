package export

import (
	"bytes"
	"encoding/json"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// A GKE entry does not carry the request URI's query, and with it whether the request was a
// dry run (?dryRun=All: kubectl diff, --dry-run=server), which decides whether the write
// happened. The response of a successful create shows it where kube-apiserver's storage does:
// a dry-run create stores nothing, and its object has no resourceVersion; a create's always has
// one (etcd3's store sets it). Nothing else tells: an update or patch answers a dry run with
// the object it would store, and one that returns the stored version with other bytes may be
// a no-op through another version or Accept header. Otherwise the event keeps
// auditlog.LostDryRun, and the replay holds request.dryRun unknown.

// dryCheck is what an entry's event shows of a create: the resourceVersion of its response
// and its request URI.
type dryCheck struct{ rv, uri string }

// dryCheckOf is the dryCheck of a successful write whose response is its object.
func dryCheckOf(ev *gkeEvent) *dryCheck {
	if ev.ObjectRef == nil || ev.ObjectRef.Subresource != "" || ev.ResponseStatus == nil ||
		ev.ResponseStatus.Code < 200 || ev.ResponseStatus.Code >= 300 || ev.Stage != auditlog.StageResponseComplete {
		return nil
	}
	if ev.Verb != "create" {
		return nil
	}
	if !hasObject(ev.ResponseObject) {
		return nil
	}
	h, ok := headerOf(ev.ResponseObject)
	if !ok {
		obj, err := auditlog.DecodeHeader(ev.ResponseObject)
		if err != nil {
			return nil
		}
		h = objectHeader{kind: obj.GetKind(), name: obj.GetName(), namespace: obj.GetNamespace(), rv: obj.GetResourceVersion()}
	}
	if h.kind == "Status" || h.name == "" {
		return nil
	}
	return &dryCheck{rv: h.rv, uri: ev.RequestURI}
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

// dryRuns settles, from their responses, whether creates were dry runs.
type dryRuns struct{}

func newDryRuns() *dryRuns { return &dryRuns{} }

// settle says whether a create was a dry run, from its response: the event's URI then says so (?dryRun=All), and it no longer loses it.
func (d *dryRuns) settle(rec *record) {
	if !rec.loss.Lost.Has(auditlog.LostDryRun) {
		return // known already (GKE's label)
	}
	c := rec.dry
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
