package export

import (
	"bytes"
	"encoding/json"
	"hash/maphash"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// A GKE entry does not carry the request URI's query, and with it whether the request was a
// dry run (?dryRun=All: kubectl diff, --dry-run=server), which decides whether the write
// happened. The response of a successful write shows it where kube-apiserver's storage does:
// a dry-run create stores nothing, and its object has no resourceVersion (a create's always
// has one: etcd3's store sets it); a dry-run update or patch answers with the object it would
// store under the resourceVersion the object has. So, in the order the server completed them,
// dryRuns keeps the resourceVersion and content of the objects creates stored: a create
// without resourceVersion was a dry run, one with a resourceVersion was not, and an update or
// patch whose response has the resourceVersion a create stored but another content was a dry
// run (a real write that changes an object changes its resourceVersion; one that changes
// nothing answers with the object as stored). Nothing else tells: a new resourceVersion may be
// a real write's or a dry run's over a write the file does not show. Otherwise the event keeps
// auditlog.LostDryRun, and the replay holds request.dryRun unknown.

// maxDryObjects bounds the objects followed: past it, they are forgotten and followed anew.
const maxDryObjects = 1 << 18

// dryHashSeed seeds the hashes of responses: they are compared within one run only.
var dryHashSeed = maphash.MakeSeed()

// dryCheck is what an entry's event shows of a write: its object, the resourceVersion and a
// hash of its response, its verb and request URI.
type dryCheck struct {
	key, rv, verb, uri string
	sum                uint64
}

// dryCheckOf is the dryCheck of a successful write whose response is its object.
func dryCheckOf(ev *gkeEvent) *dryCheck {
	if ev.ObjectRef == nil || ev.ObjectRef.Subresource != "" || ev.ResponseStatus == nil ||
		ev.ResponseStatus.Code < 200 || ev.ResponseStatus.Code >= 300 || ev.Stage != auditlog.StageResponseComplete {
		return nil
	}
	switch ev.Verb {
	case "create", "update", "patch", "apply":
	default:
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
	r := ev.ObjectRef
	return &dryCheck{key: r.APIGroup + "/" + r.Resource + "/" + h.namespace + "/" + h.name,
		rv: h.rv, verb: ev.Verb, uri: ev.RequestURI, sum: maphash.Bytes(dryHashSeed, ev.ResponseObject)}
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

type dryVersion struct {
	rv  string
	sum uint64
}

// dryRuns follows the objects of a file's writes.
type dryRuns struct{ objects map[string]dryVersion }

func newDryRuns() *dryRuns { return &dryRuns{objects: map[string]dryVersion{}} }

// settle says, of a record in the server's order, whether its request was a dry run where its
// response shows it: the event's URI then says so (?dryRun=All), and it no longer loses it.
func (d *dryRuns) settle(rec *record) {
	c := rec.dry
	prev, seen := d.objects[c.key]
	dry, known := false, false
	switch {
	case c.verb == "create":
		dry, known = c.rv == "", true
		if !dry {
			if len(d.objects) >= maxDryObjects {
				clear(d.objects)
			}
			d.objects[c.key] = dryVersion{rv: c.rv, sum: c.sum}
		}
	case seen && c.rv == prev.rv && c.sum != prev.sum:
		dry, known = true, true // another content under the stored version: nothing was stored
	}
	if !known {
		return
	}
	rec.loss.Lost &^= auditlog.LostDryRun
	if dry {
		old, _ := json.Marshal(c.uri)
		uri, _ := json.Marshal(c.uri + "?dryRun=All")
		rec.data = bytes.Replace(rec.data, append([]byte(`"requestURI":`), old...), append([]byte(`"requestURI":`), uri...), 1)
	}
}
