package replay

import (
	"errors"
	"fmt"
	"io"
	"k8s.io/apimachinery/pkg/api/equality"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// loadSnapshot seeds the State with the objects of snapshot files or folders: the output of
// `kubectl get ... -o yaml` or `-o json` (a List, or one or more documents). Every resource a
// snapshot holds objects of is taken to be complete: the snapshot holds all its objects.
// Objects of resources no policy reads are dropped as they are read.
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
	for _, f := range files {
		k, err := r.loadSnapshotFile(f, seen)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// seenObject is where a snapshot object was read, to tell duplicates apart from repeats.
type seenObject struct {
	where string
	obj   *unstructured.Unstructured
}

func (r *Replayer) loadSnapshotFile(file string, seen map[string]seenObject) (int, error) {
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
		u := &unstructured.Unstructured{Object: m}
		if items, ok := m["items"].([]any); ok && strings.HasSuffix(u.GetKind(), "List") {
			itemKind := strings.TrimSuffix(u.GetKind(), "List")
			for i, it := range items {
				im, ok := it.(map[string]any)
				if !ok {
					return n, fmt.Errorf("snapshot %s: document %d: items[%d] is not an object", file, doc, i)
				}
				iu := &unstructured.Unstructured{Object: im}
				if iu.GetKind() == "" && itemKind != "" {
					iu.SetAPIVersion(u.GetAPIVersion())
					iu.SetKind(itemKind)
				}
				k, err := r.seed(iu, fmt.Sprintf("%s: document %d: items[%d]", file, doc, i), seen)
				n += k
				if err != nil {
					return n, err
				}
			}
			continue
		}
		k, err := r.seed(u, fmt.Sprintf("%s: document %d", file, doc), seen)
		n += k
		if err != nil {
			return n, err
		}
	}
}

// seed puts one snapshot object in the State. An object without a name, or the same object
// twice with different contents, is an error: the snapshot cannot say which state was live.
func (r *Replayer) seed(u *unstructured.Unstructured, where string, seen map[string]seenObject) (int, error) {
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" {
		return 0, fmt.Errorf("snapshot %s: no kind", where)
	}
	m, err := r.resources.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return 0, fmt.Errorf("snapshot %s: %s %s: %v", where, gvk.GroupVersion(), gvk.Kind, err)
	}
	gr := m.Resource.GroupResource()
	if u.GetName() == "" {
		return 0, fmt.Errorf("snapshot %s: %s without metadata.name", where, gvk.Kind)
	}
	if !r.state.Keeps(gr) {
		return 0, nil
	}
	if u.GetNamespace() == "" && m.Scope.Name() == "namespace" {
		u.SetNamespace("default")
	}
	key := gr.String() + "/" + u.GetNamespace() + "/" + u.GetName()
	if prev, ok := seen[key]; ok {
		if equality.Semantic.DeepEqual(prev.obj.Object, u.Object) {
			return 0, nil // the same object listed twice, e.g. by two overlapping snapshots
		}
		return 0, fmt.Errorf("snapshot %s: %s %q is also in %s with other contents", where, gr, key[len(gr.String())+1:], prev.where)
	}
	seen[key] = seenObject{where: where, obj: u}
	r.state.MarkComplete(gr, "snapshot")
	if err := r.state.Put(gr, u, "snapshot"); err != nil {
		return 0, fmt.Errorf("snapshot %s: %v", where, err)
	}
	return 1, nil
}
