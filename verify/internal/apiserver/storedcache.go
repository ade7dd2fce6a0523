package apiserver

import (
	"bytes"
	"hash/maphash"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// storedCache keeps the objects the stores decoded last, by their stored JSON: a replay serves
// the same stored object several times (the write that follows it in the State, then each
// pass and each state the decision is evaluated in), and decoding it (JSON into the external
// version, defaulted, converted) costs many times what the rest of a store's read does.
//
// A decoded object is shared by every world that reads the same JSON: a world never changes
// what it loaded (see memStorage.load), and the decoding is a function of the JSON alone. An
// entry is found by a hash of the JSON and taken only when the JSON is the same, byte for
// byte.
type storedCache struct {
	mu      sync.Mutex
	seed    maphash.Seed
	entries map[uint64]storedEntry
	// order is the entries' hashes in the order they were added: the oldest is dropped first.
	order []uint64
	next  int
}

type storedEntry struct {
	gr  schema.GroupResource
	raw []byte
	obj runtime.Object
}

// storedCacheSize bounds the entries: enough for the objects a few requests in flight read,
// with each of their passes and states.
const storedCacheSize = 256

func newStoredCache() *storedCache {
	return &storedCache{seed: maphash.MakeSeed(), entries: make(map[uint64]storedEntry, storedCacheSize), order: make([]uint64, 0, storedCacheSize)}
}

// decode is decodeStored through the cache. The object it returns is shared: it must not be
// changed.
func (c *storedCache) decode(gr schema.GroupResource, raw []byte) (runtime.Object, error) {
	h := maphash.Bytes(c.seed, raw)
	c.mu.Lock()
	e, ok := c.entries[h]
	c.mu.Unlock()
	if ok && e.gr == gr && bytes.Equal(e.raw, raw) {
		return e.obj, nil
	}
	obj, err := decodeStored(gr, raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[h]; !ok {
		if len(c.order) < storedCacheSize {
			c.order = append(c.order, h)
		} else {
			delete(c.entries, c.order[c.next])
			c.order[c.next] = h
			c.next = (c.next + 1) % storedCacheSize
		}
	}
	c.entries[h] = storedEntry{gr: gr, raw: raw, obj: obj}
	return obj, nil
}
