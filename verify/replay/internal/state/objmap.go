package state

import (
	"hash/maphash"
	"iter"
	"maps"
)

// objMap is the objects of a bucket, in shards that a bucket and its clone share until one of
// them writes to a shard: a node status update after a View took the node bucket copies the
// one shard the node is in, not every node.
type objMap struct {
	shards [objShards]map[ObjectKey]typedEntry
	owned  uint64 // bit i: shards[i] is this map's own, written in place
	n      int
}

const objShards = 32

var objSeed = maphash.MakeSeed()

func shardOf(k ObjectKey) int { return int(maphash.Comparable(objSeed, k) % objShards) }

func (m *objMap) get(k ObjectKey) (typedEntry, bool) {
	e, ok := m.shards[shardOf(k)][k]
	return e, ok
}

func (m *objMap) set(k ObjectKey, e typedEntry) {
	s := m.writable(shardOf(k))
	if _, ok := s[k]; !ok {
		m.n++
	}
	s[k] = e
}

func (m *objMap) delete(k ObjectKey) {
	i := shardOf(k)
	if _, ok := m.shards[i][k]; !ok {
		return
	}
	delete(m.writable(i), k)
	m.n--
}

func (m *objMap) len() int { return m.n }

// all is every object, in no particular order.
func (m *objMap) all() iter.Seq2[ObjectKey, typedEntry] {
	return func(yield func(ObjectKey, typedEntry) bool) {
		for _, s := range m.shards {
			for k, e := range s {
				if !yield(k, e) {
					return
				}
			}
		}
	}
}

// clone returns a map that shares every shard with m until either writes to it. m must not
// be written after: a frozen bucket's map is only read.
func (m *objMap) clone() objMap {
	c := *m
	c.owned = 0
	return c
}

func (m *objMap) writable(i int) map[ObjectKey]typedEntry {
	if m.owned&(1<<i) == 0 {
		c := make(map[ObjectKey]typedEntry, len(m.shards[i])+1)
		maps.Copy(c, m.shards[i])
		m.shards[i] = c
		m.owned |= 1 << i
	}
	return m.shards[i]
}
