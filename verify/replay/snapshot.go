package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/catalog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// loadSnapshot seeds the State with the objects of snapshot files or folders: the output of
// `kubectl get ... -o yaml` or `-o json` (a List, or one or more documents), or `vapc snapshot`
// (a typed List a resource, marked CompleteListKey). Every resource a snapshot holds objects
// of, or a marked List of (a LimitRangeList, empty or not), is taken to be complete: the
// snapshot holds all its objects.
// Objects of resources no policy reads are dropped as they are read. The snapshot's
// CustomResourceDefinitions are served from the start (see catalog.Catalog.Seed); an object of a kind
// that only a CRD read later in the snapshot defines is seeded once every file is read.
func (r *Replayer) loadSnapshot(paths []string) (int, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return 0, fmt.Errorf("snapshot: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			ext := strings.ToLower(filepath.Ext(path))
			if !d.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("snapshot: %w", err)
		}
	}
	sort.Strings(files)
	n := 0
	seen := map[string]seenObject{}
	r.cat.deferred = []deferredObject{}
	for _, f := range files {
		k, err := r.loadSnapshotFile(f, seen)
		n += k
		if err != nil {
			return n, err
		}
	}
	deferred := r.cat.deferred
	r.cat.deferred = nil
	for _, d := range deferred {
		k, err := r.seed(d.u, nil, d.where, seen)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// deferredObject is an object of a snapshot of a kind the catalog does not know when it is
// read: a CRD read later may define it.
type deferredObject struct {
	u     *unstructured.Unstructured
	where string
}

// seenObject is where a snapshot object was read, to tell duplicates apart from repeats: raw is
// the object's JSON (the bytes the State holds), not the decoded object, so that loading a
// snapshot does not hold every object decoded at once.
type seenObject struct {
	where string
	raw   []byte
}

func (r *Replayer) loadSnapshotFile(file string, seen map[string]seenObject) (int, error) {
	if n, ok, err := r.loadYAMLListFile(file, seen); ok {
		return n, err
	}
	if n, ok, err := r.loadJSONListFile(file, seen); ok {
		return n, err
	}
	f, err := os.Open(file)
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 64<<10)
	n := 0
	for doc := 1; ; doc++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, fmt.Errorf("snapshot %s: document %d: %v", file, doc, err)
		}
		if m == nil {
			continue
		}
		k, err := r.seedDocument(m, file, doc, seen)
		n += k
		if err != nil {
			return n, err
		}
	}
}

// seedDocument seeds the object of one decoded document, or each item of a List.
func (r *Replayer) seedDocument(m map[string]any, file string, doc int, seen map[string]seenObject) (int, error) {
	u := &unstructured.Unstructured{Object: m}
	items, ok := m["items"].([]any)
	if !ok || !strings.HasSuffix(u.GetKind(), "List") {
		return r.seed(u, nil, fmt.Sprintf("%s: document %d", file, doc), seen)
	}
	itemKind := strings.TrimSuffix(u.GetKind(), "List")
	n, ofKind := 0, true
	for i, it := range items {
		ofKind = ofKind && itemOfKind(it, itemKind)
		k, err := r.seedItem(u, itemKind, it, nil, file, doc, i, seen)
		n += k
		if err != nil {
			return n, err
		}
	}
	r.listComplete(u, itemKind, ofKind)
	return n, nil
}

// seedItem seeds item i of a List (list, of items of the kind itemKind when it is a typed
// List) in document doc of a snapshot file; raw is the item's JSON when the decoder made it
// (see decodedItem), or nil.
func (r *Replayer) seedItem(list *unstructured.Unstructured, itemKind string, item any, raw []byte, file string, doc, i int, seen map[string]seenObject) (int, error) {
	im, ok := item.(map[string]any)
	if !ok {
		return 0, fmt.Errorf("snapshot %s: document %d: items[%d] is not an object", file, doc, i)
	}
	iu := &unstructured.Unstructured{Object: im}
	if iu.GetKind() == "" && itemKind != "" {
		iu.SetAPIVersion(list.GetAPIVersion())
		iu.SetKind(itemKind)
		raw = nil // no longer the object's
	}
	return r.seed(iu, raw, fmt.Sprintf("%s: document %d: items[%d]", file, doc, i), seen)
}

// CompleteListKey marks a List `vapc snapshot` wrote (verify/snapshot): a typed List of one
// resource (a LimitRangeList) listed in every namespace, all its pages, so that it holds every
// object of the resource, and none when it is empty. A List without it may be one namespace's,
// filtered or a page (`kubectl get --raw` of a namespace's LimitRanges is a LimitRangeList too):
// its being empty says nothing.
const CompleteListKey = "vapc.dev/complete"

// listComplete marks the resource of a List vapc snapshot wrote (CompleteListKey) complete,
// when its items were all of its kind (ofKind, see itemOfKind). A kind the replay does not know
// yet is left.
func (r *Replayer) listComplete(list *unstructured.Unstructured, itemKind string, ofKind bool) {
	if complete, _ := list.Object[CompleteListKey].(bool); !complete || itemKind == "" || !ofKind {
		return
	}
	gv, err := schema.ParseGroupVersion(list.GetAPIVersion())
	if err != nil {
		return
	}
	m, err := r.cfg.resources.RESTMapper().RESTMapping(gv.WithKind(itemKind).GroupKind(), gv.Version)
	if err != nil {
		return
	}
	if gr := m.Resource.GroupResource(); r.state.Keeps(gr) {
		r.state.MarkComplete(gr, "snapshot")
		// The revision the List was read at: every write committed at or before it is one
		// whose effect the snapshot holds (snapshotread.go).
		if !isEvents(gr) {
			r.state.Seeded(gr, state.ResourceVersion(list.GetResourceVersion()))
		}
	}
}

// itemOfKind says whether a List's item is an object of the List's item kind (or of none).
func itemOfKind(item any, itemKind string) bool {
	m, ok := item.(map[string]any)
	return ok && (m["kind"] == nil || m["kind"] == itemKind)
}

// seed puts one snapshot object in the State, its JSON raw when its decoder made it (nil:
// marshalled here). An object without a name, or the same object twice with different
// contents, is an error: the snapshot cannot say which state was live.
func (r *Replayer) seed(u *unstructured.Unstructured, raw []byte, where string, seen map[string]seenObject) (int, error) {
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" {
		return 0, fmt.Errorf("snapshot %s: no kind", where)
	}
	if gvk == catalog.CRDKind {
		if err := r.cat.c.Seed(u, where); err != nil {
			return 0, err
		}
	}
	m, err := r.cfg.resources.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) && r.cat.c.Schema() != nil && r.cat.deferred != nil {
			r.cat.deferred = append(r.cat.deferred, deferredObject{u: u, where: where})
			return 0, nil
		}
		if meta.IsNoMatchError(err) {
			// The server's own discovery serves it (an aggregated API's kind, metrics.k8s.io's
			// PodMetrics) or a CRD the replay was not given defines it.
			return 0, fmt.Errorf("snapshot %s: %s %s is not a kind of Kubernetes 1.37 or of a CRD the replay knows: give its CustomResourceDefinition (in the snapshot or with --crd), or leave its objects out of the snapshot (an aggregated API's, such as metrics.k8s.io's, are not stored by kube-apiserver)", where, gvk.GroupVersion(), gvk.Kind)
		}
		return 0, fmt.Errorf("snapshot %s: %s %s: %v", where, gvk.GroupVersion(), gvk.Kind, err)
	}
	gr := m.Resource.GroupResource()
	if u.GetName() == "" {
		return 0, fmt.Errorf("snapshot %s: %s without metadata.name", where, gvk.Kind)
	}
	if r.cfg.observer.Snapshot != nil {
		r.cfg.observer.Snapshot(u)
	}
	if isMutator(gr) {
		r.mutators = r.mutators.withObject(gr, u.GetName(), u, "")
	}
	if !r.state.Keeps(gr) {
		return 0, nil
	}
	if u.GetNamespace() == "" && m.Scope.Name() == "namespace" {
		u.SetNamespace("default")
		raw = nil // no longer the object's
	}
	key := gr.String() + "/" + u.GetNamespace() + "/" + u.GetName()
	if raw == nil {
		var err error
		if raw, err = json.Marshal(u.Object); err != nil {
			return 0, fmt.Errorf("snapshot %s: %v", where, err)
		}
	}
	if prev, ok := seen[key]; ok {
		if sameSnapshotObject(prev.raw, raw, u) {
			return 0, nil // the same object listed twice, e.g. by two overlapping snapshots
		}
		return 0, fmt.Errorf("snapshot %s: %s %q is also in %s with other contents", where, gr, key[len(gr.String())+1:], prev.where)
	}
	seen[key] = seenObject{where: where, raw: raw}
	r.state.MarkComplete(gr, "snapshot")
	if err := r.state.PutRaw(gr, u, raw, nil, "snapshot"); err != nil {
		return 0, fmt.Errorf("snapshot %s: %v", where, err)
	}
	if !isEvents(gr) { // their revisions may be another etcd's
		r.state.Seeded(gr, state.ResourceVersion(u.GetResourceVersion()))
	}
	return 1, nil
}

// sameSnapshotObject says whether an object read twice has the same contents
// (equality.Semantic.DeepEqual of the decoded objects): equal JSON is, and otherwise the first
// is decoded again as it was read (encoding/json, as sigs.k8s.io/yaml decodes) and compared.
func sameSnapshotObject(prevRaw, raw []byte, u *unstructured.Unstructured) bool {
	if bytes.Equal(prevRaw, raw) {
		return true
	}
	var prev map[string]any
	if err := json.Unmarshal(prevRaw, &prev); err != nil {
		return false
	}
	return equality.Semantic.DeepEqual(prev, u.Object)
}

// withoutSnapshotFastPath turns loadYAMLListFile off, for tests to compare both paths.
func withoutSnapshotFastPath() Option {
	return func(r *Replayer) error { r.cfg.slowSnapshot = true; return nil }
}

// loadYAMLListFile is the fast path of loadSnapshotFile for what `kubectl get -o yaml` writes:
// YAML documents, each a List whose items are a block sequence at column 0. It decodes each
// item on its own (with sigs.k8s.io/yaml, as the general path does for the whole document) and
// seeds it at once, so that a large snapshot is never held decoded at once. ok is false when
// the file is not of that shape and nothing was seeded: the general path reads it. A document
// whose items do not decode one by one (an alias to an anchor of another item) is decoded
// whole, as the general path would.
func (r *Replayer) loadYAMLListFile(file string, seen map[string]seenObject) (n int, ok bool, err error) {
	if r.cfg.slowSnapshot {
		return 0, false, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, false, nil
	}
	if utilyaml.IsJSONBuffer(data[:min(len(data), 64<<10)]) {
		return 0, false, nil
	}
	docs, ok := yamlDocuments(data)
	if !ok {
		return 0, false, nil
	}
	data = nil
	for i, d := range docs {
		doc := i + 1
		k, err := r.loadYAMLDocument(file, doc, d, seen)
		n += k
		if err != nil {
			return n, true, err
		}
		docs[i] = nil
	}
	return n, true, nil
}

// loadYAMLDocument seeds the objects of one YAML document, item by item when it is a List of
// block items.
func (r *Replayer) loadYAMLDocument(file string, doc int, data []byte, seen map[string]seenObject) (int, error) {
	n := 0
	if header, items, ok := splitYAMLList(data); ok {
		var m map[string]any
		err := yaml.Unmarshal(header, &m)
		// A second items key (items: null after the block) leaves the choice to the general path.
		if _, hasItems := m["items"]; err == nil && m != nil && !hasItems {
			u := &unstructured.Unstructured{Object: m}
			if strings.HasSuffix(u.GetKind(), "List") {
				itemKind := strings.TrimSuffix(u.GetKind(), "List")
				whole, ofKind := false, true
				dec := decodeYAMLItems(items)
				defer dec.stop()
				for i := range items {
					v := dec.next(i)
					if v.err != nil {
						whole = true // decode the whole document below
						break
					}
					ofKind = ofKind && itemOfKind(v.v, itemKind)
					k, err := r.seedItem(u, itemKind, v.v, v.raw, file, doc, i, seen)
					n += k
					if err != nil {
						return n, err
					}
				}
				if !whole {
					r.listComplete(u, itemKind, ofKind)
					return n, nil
				}
			}
		}
	}
	// The general case: decode the document whole, as utilyaml.YAMLToJSONDecoder does. Objects
	// already seeded from it are seen again with the same contents and not counted twice.
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return n, fmt.Errorf("snapshot %s: document %d: %v", file, doc, err)
	}
	if m == nil {
		return n, nil
	}
	k, err := r.seedDocument(m, file, doc, seen)
	return n + k, err
}

// decodedItem is one List item decoded: v, and raw, its JSON without white space (the bytes
// the State holds of it, made beside its decoding, on every core), or nil.
type decodedItem struct {
	v   any
	raw []byte
	err error
}

// itemDecoder decodes List items on every core, at most itemWindow ahead of the reader, which
// takes them in order with next and calls stop when it is done.
type itemDecoder struct {
	out    []chan decodedItem
	window chan struct{}
	done   chan struct{}
}

const itemWindow = 256

func decodeYAMLItems(items [][]byte) *itemDecoder {
	return decodeItems(items, func(item []byte) (any, []byte, error) {
		// sigs.k8s.io/yaml.Unmarshal into an interface: the item's JSON (YAMLToJSON converts
		// for an interface as for no target), decoded as encoding/json decodes it. The JSON is
		// encoding/json's of what the YAML decoded into (YAMLToJSON marshals it), the State's
		// but where an integer is beyond float64's (exactInFloat).
		j, err := yaml.YAMLToJSON(blankedItem(item))
		if err != nil {
			return nil, nil, err
		}
		v, err := decodeJSONItem(j)
		if err != nil || !exactInFloat(j) {
			return v, nil, err // seed marshals it
		}
		return v, j, nil
	})
}

// decodeJSONItem decodes a List item's JSON as encoding/json decodes it into an interface,
// faster: auditlog.DecodeAnyObject, its integers made float64 (but where the JSON may hold -0,
// which encoding/json decodes).
func decodeJSONItem(item []byte) (any, error) {
	if len(item) > 0 && item[0] == '{' && !negativeZero(item) {
		if o := auditlog.DecodeAnyObject(item); o != nil {
			return floatNumbers(o.Object), nil
		}
	}
	var v any
	err := json.Unmarshal(item, &v)
	return v, err
}

// exactInFloat says whether JSON holds no integer of more than 15 digits, which the float64
// decodeJSONItem makes it may not hold exactly: the JSON is then encoding/json's of what it
// decodes into. (A run of digits in a string counts too.)
func exactInFloat(j []byte) bool {
	run := 0
	for _, c := range j {
		if c < '0' || c > '9' {
			run = 0
		} else if run++; run > 15 {
			return false
		}
	}
	return true
}

// decodeJSONItemRaw is decodeJSONItem with the JSON encoding/json makes of what it decoded,
// which seed would make: the State holds the same JSON whichever way the snapshot is read.
func decodeJSONItemRaw(item []byte) (any, []byte, error) {
	v, err := decodeJSONItem(item)
	if err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v, nil, nil // seed reports it
	}
	return v, raw, nil
}

// decodeItems decodes items with decode on every core (see itemDecoder).
func decodeItems(items [][]byte, decode func([]byte) (any, []byte, error)) *itemDecoder {
	d := &itemDecoder{out: make([]chan decodedItem, len(items)), window: make(chan struct{}, itemWindow), done: make(chan struct{})}
	for i := range d.out {
		d.out[i] = make(chan decodedItem, 1)
	}
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range items {
			select {
			case d.window <- struct{}{}:
			case <-d.done:
				return
			}
			next <- i
		}
	}()
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		go func() {
			for i := range next {
				v, raw, err := decode(items[i])
				items[i] = nil
				d.out[i] <- decodedItem{v, raw, err}
			}
		}()
	}
	return d
}

// next returns item i, decoded; items are taken in order.
func (d *itemDecoder) next(i int) decodedItem {
	v := <-d.out[i]
	<-d.window
	return v
}

// stop lets the decoders end.
func (d *itemDecoder) stop() { close(d.done) }

// yamlDocuments splits YAML into its documents exactly as utilyaml.YAMLReader does (lines
// without their line ends, each ended by "\n"; a line beginning with "---" separates documents;
// empty documents are dropped). ok is false when a separator line carries more than a comment:
// the general path reports it.
func yamlDocuments(data []byte) (docs [][]byte, ok bool) {
	if bytes.IndexByte(data, '\r') < 0 && (len(data) == 0 || data[len(data)-1] == '\n') {
		return yamlDocumentsInPlace(data)
	}
	var cur []byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var l []byte
		if i < 0 {
			l, data = data, nil
		} else {
			l, data = data[:i], data[i+1:]
		}
		l = bytes.TrimSuffix(l, []byte("\r"))
		if bytes.HasPrefix(l, []byte("---")) {
			rest := bytes.TrimSpace(l[3:])
			if len(rest) > 0 && rest[0] != '#' {
				return nil, false
			}
			if len(cur) > 0 {
				docs = append(docs, cur)
				cur = nil
			}
			continue
		}
		cur = append(append(cur, l...), '\n')
	}
	if len(cur) > 0 {
		docs = append(docs, cur)
	}
	return docs, true
}

// yamlDocumentsInPlace is yamlDocuments for data whose lines all end with "\n" alone: the
// documents are the runs of lines between separators, as they are in data.
func yamlDocumentsInPlace(data []byte) (docs [][]byte, ok bool) {
	start := 0
	for at := 0; at < len(data); {
		i := bytes.IndexByte(data[at:], '\n')
		l := data[at : at+i]
		next := at + i + 1
		if bytes.HasPrefix(l, []byte("---")) {
			rest := bytes.TrimSpace(l[3:])
			if len(rest) > 0 && rest[0] != '#' {
				return nil, false
			}
			if at > start {
				docs = append(docs, data[start:at:at])
			}
			start = next
		}
		at = next
	}
	if len(data) > start {
		docs = append(docs, data[start:len(data):len(data)])
	}
	return docs, true
}

// splitYAMLList splits a document with one top-level "items:" key whose value is a block
// sequence at column 0 (as kubectl writes it) into the document without it and the text of each
// item, as slices of doc (blankedItem blanks an item's "-" before it is decoded, so that every
// line keeps its column). ok is false for any other shape.
func splitYAMLList(doc []byte) (header []byte, items [][]byte, ok bool) {
	const (
		top = iota
		beforeItems
		inItems
		after
	)
	state := top
	itemAt := -1 // where the item being read begins in doc
	for at := 0; at < len(doc); {
		i := bytes.IndexByte(doc[at:], '\n')
		if i < 0 {
			return nil, nil, false // yamlDocuments ends every line
		}
		l := doc[at : at+i+1]
		lineAt := at
		at += i + 1
		blank := len(bytes.TrimSpace(l)) == 0
		col0 := !blank && l[0] != ' ' && l[0] != '\t' && l[0] != '#'
		entry := col0 && (bytes.HasPrefix(l, []byte("- ")) || bytes.Equal(bytes.TrimRight(l, " \t\r\n"), []byte("-")))
		if col0 && bytes.HasPrefix(l, []byte("...")) {
			return nil, nil, false // a document's end: what follows is not its
		}
		switch state {
		case top, after:
			if col0 && bytes.Equal(bytes.TrimRight(l, " \t\r\n"), []byte("items:")) {
				if state == after {
					return nil, nil, false
				}
				state = beforeItems
				continue
			}
			header = append(header, l...)
		case beforeItems:
			switch {
			case blank || l[0] == '#':
			case entry:
				state = inItems
				itemAt = lineAt
			default:
				return nil, nil, false // items: [], items at another column, ...
			}
		case inItems:
			switch {
			case entry:
				items = append(items, doc[itemAt:lineAt:lineAt])
				itemAt = lineAt
			case col0:
				items = append(items, doc[itemAt:lineAt:lineAt])
				itemAt = -1
				state = after
				header = append(header, l...)
			}
		}
	}
	if itemAt >= 0 {
		items = append(items, doc[itemAt:len(doc):len(doc)])
	}
	if state != inItems && state != after {
		return nil, nil, false
	}
	return header, items, true
}

// blankedItem is an item of splitYAMLList as a document of its own: its "-" blanked, so that
// every line keeps its column.
func blankedItem(item []byte) []byte {
	return append([]byte{' '}, item[1:]...)
}

// loadJSONListFile is the fast path of loadSnapshotFile for what `kubectl get -o json` writes:
// JSON documents, a List's items decoded one by one on every core (auditlog.DecodeAnyObject,
// as the replay decodes the log's objects) and seeded at once, so that a large snapshot is
// never held decoded at once (the general path decodes each document whole). ok is false when
// the file is not JSON documents that are objects, and nothing was seeded: the general path
// reads it, and says what is wrong.
func (r *Replayer) loadJSONListFile(file string, seen map[string]seenObject) (n int, ok bool, err error) {
	if r.cfg.slowSnapshot {
		return 0, false, nil
	}
	data, err := os.ReadFile(file)
	if err != nil || !utilyaml.IsJSONBuffer(data[:min(len(data), 64<<10)]) {
		return 0, false, nil
	}
	docs, ok := jsonDocuments(data)
	if !ok {
		return 0, false, nil
	}
	for i, d := range docs {
		k, err := r.seedJSONDocument(file, i+1, d, seen)
		n += k
		if err != nil {
			return n, true, err
		}
	}
	return n, true, nil
}

// jsonDocument is one top-level JSON object of a file: its members but items, decoded, and
// its items (when it has an array of them) as their bytes.
type jsonDocument struct {
	header   map[string]any
	items    [][]byte
	hasItems bool
}

// jsonDocuments splits JSON into its documents, each an object, with encoding/json (which
// checks them); ok is false for anything else.
func jsonDocuments(data []byte) (docs []jsonDocument, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		t, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return docs, true
		}
		if err != nil || t != json.Delim('{') {
			return nil, false
		}
		d := jsonDocument{header: map[string]any{}}
		for dec.More() {
			t, err := dec.Token()
			key, isKey := t.(string)
			if err != nil || !isKey {
				return nil, false
			}
			if key != "items" || d.hasItems {
				var v any
				if err := dec.Decode(&v); err != nil {
					return nil, false
				}
				if key == "items" {
					return nil, false // items twice: the general path decides which
				}
				d.header[key] = v
				continue
			}
			if t, err := dec.Token(); err != nil || t != json.Delim('[') {
				return nil, false
			}
			d.hasItems = true
			d.items = [][]byte{}
			for dec.More() {
				start := dec.InputOffset()
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return nil, false
				}
				// The offset before the item may be before the comma that precedes it.
				d.items = append(d.items, bytes.TrimLeft(data[start:dec.InputOffset()], ", \t\r\n"))
			}
			if t, err := dec.Token(); err != nil || t != json.Delim(']') {
				return nil, false
			}
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('}') {
			return nil, false
		}
		docs = append(docs, d)
	}
}

// floatNumbers makes the integers of a decoded object float64, as encoding/json decodes every
// number into an interface (the general path): the State holds the same JSON either way.
func floatNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = floatNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = floatNumbers(e)
		}
	case int64:
		return float64(x)
	}
	return v
}

// negativeZero says whether JSON may hold the number -0, which encoding/json keeps (as the
// float64 -0) and an integer does not: such an item is decoded as the general path does.
func negativeZero(b []byte) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("-0"))
		if j < 0 {
			return false
		}
		at := i + j
		i = at + 2
		k := at - 1
		for k >= 0 && (b[k] == ' ' || b[k] == '\t' || b[k] == '\r' || b[k] == '\n') {
			k--
		}
		if k < 0 || (b[k] != ':' && b[k] != ',' && b[k] != '[') {
			continue // in a string, or not a number's start
		}
		if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E' || (b[i] >= '0' && b[i] <= '9')) {
			continue // -0.5, -0e1: a float either way
		}
		return true
	}
}

// seedJSONDocument seeds the objects of one JSON document, item by item when it is a List.
func (r *Replayer) seedJSONDocument(file string, doc int, d jsonDocument, seen map[string]seenObject) (int, error) {
	u := &unstructured.Unstructured{Object: d.header}
	if !d.hasItems || !strings.HasSuffix(u.GetKind(), "List") {
		if d.hasItems {
			items := make([]any, len(d.items))
			for i, it := range d.items {
				if err := json.Unmarshal(it, &items[i]); err != nil {
					return 0, fmt.Errorf("snapshot %s: document %d: items[%d]: %v", file, doc, i, err)
				}
			}
			d.header["items"] = items
		}
		return r.seedDocument(d.header, file, doc, seen)
	}
	itemKind := strings.TrimSuffix(u.GetKind(), "List")
	dec := decodeItems(d.items, decodeJSONItemRaw)
	defer dec.stop()
	n, ofKind := 0, true
	for i := range d.items {
		v := dec.next(i)
		if v.err != nil {
			return n, fmt.Errorf("snapshot %s: document %d: items[%d]: %v", file, doc, i, v.err)
		}
		ofKind = ofKind && itemOfKind(v.v, itemKind)
		k, err := r.seedItem(u, itemKind, v.v, v.raw, file, doc, i, seen)
		n += k
		if err != nil {
			return n, err
		}
	}
	r.listComplete(u, itemKind, ofKind)
	return n, nil
}
