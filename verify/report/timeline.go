package report

import (
	"encoding/json"
	"sort"
)

// bucketSizes are the widths a report's time buckets may have, in milliseconds.
var bucketSizes = []int64{
	1000, 2000, 5000, 10000, 15000, 30000,
	60000, 2 * 60000, 5 * 60000, 10 * 60000, 15 * 60000, 30 * 60000,
	3600000, 2 * 3600000, 3 * 3600000, 6 * 3600000, 12 * 3600000, 24 * 3600000,
}

// maxBuckets bounds the buckets of a span: the page merges them further to fit its width.
const maxBuckets = 1500

// chooseBucket is the narrowest bucket that divides a span of ms into at most maxBuckets.
func chooseBucket(ms int64) int64 {
	for _, b := range bucketSizes {
		if ms/b < maxBuckets {
			return b
		}
	}
	last := bucketSizes[len(bucketSizes)-1]
	return (ms/maxBuckets/last + 1) * last
}

// bucketOf is the start of the bucket of a Unix second, from start.
func bucketOf(sec, start, bucket int64) int64 {
	rel := sec*1000 - start
	if rel < 0 {
		rel = 0
	}
	return floorDiv(rel, bucket) * bucket
}

// decisions sums the per-second counts into buckets of the span's bucket, or coarser while
// they are more than maxDecisionPoints.
func (b *Builder) decisions(start, bucket int64) Decisions {
	for {
		d := b.decisionsIn(start, bucket)
		n := len(d.All)
		for _, s := range d.Series {
			n += len(s.Points)
		}
		if n <= maxDecisionPoints {
			return d
		}
		bucket *= 2
	}
}

func (b *Builder) decisionsIn(start, bucket int64) Decisions {
	d := Decisions{Bucket: bucket, All: [][4]int64{}, Series: []Series{}}
	all := map[int64]*[4]int64{}
	for sec, c := range b.all {
		t := bucketOf(sec, start, bucket)
		p := all[t]
		if p == nil {
			p = &[4]int64{t}
			all[t] = p
		}
		for i := range c {
			p[i+1] += c[i]
		}
	}
	for _, t := range sortedInt64Keys(all) {
		d.All = append(d.All, *all[t])
	}
	var keys []bindingKey
	for k := range b.series {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].policy != keys[j].policy {
			return keys[i].policy < keys[j].policy
		}
		return keys[i].binding < keys[j].binding
	})
	for _, k := range keys {
		pts := map[int64]*[6]int64{}
		for sec, c := range b.series[k] {
			t := bucketOf(sec, start, bucket)
			p := pts[t]
			if p == nil {
				p = &[6]int64{t}
				pts[t] = p
			}
			for i := range c {
				p[i+1] += c[i]
			}
		}
		s := Series{Policy: k.policy, Binding: k.binding, Points: [][6]int64{}}
		for _, t := range sortedInt64Keys(pts) {
			s.Points = append(s.Points, *pts[t])
		}
		d.Series = append(d.Series, s)
	}
	return d
}

func sortedInt64Keys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// nodes builds the lanes: every node whose state the log changed, that spent time not Ready,
// tainted, cordoned or with a condition, or that a marker or a decision concerns; the most
// active first.
func (b *Builder) nodes(start, end, bucket int64) Nodes {
	n := Nodes{Lanes: []Lane{}, LabelKeys: []string{}, Groups: []string{}}
	groups := map[string]bool{}
	keys := map[string]bool{}
	for _, name := range sortedKeys(b.lanes) {
		l := b.lanes[name]
		out := l.finish(start, end, bucket)
		interesting := l.changes > 0 || len(out.Markers) > 0 || l.decisions > 0 || len(out.Taints) > 0 || len(out.Cordons) > 0 || len(out.Conditions) > 0
		for _, s := range out.Ready {
			interesting = interesting || s.V != "True"
		}
		if !interesting {
			if l.inLog {
				n.Quiet++
			}
			continue
		}
		n.Lanes = append(n.Lanes, out)
	}
	sort.SliceStable(n.Lanes, func(i, j int) bool {
		a, c := n.Lanes[i], n.Lanes[j]
		if (a.Node == "") != (c.Node == "") {
			return c.Node == "" // the pods of unknown nodes last
		}
		return a.Activity > c.Activity
	})
	size := 0
	for i, l := range n.Lanes {
		j, _ := json.Marshal(l)
		if size += len(j); size > maxLaneBytes {
			n.LeftOut = len(n.Lanes) - i
			n.Lanes = n.Lanes[:i]
			break
		}
	}
	for _, l := range n.Lanes {
		for k := range l.Labels {
			keys[k] = true
		}
		for _, m := range l.Markers {
			groups[m.G] = true
		}
	}
	n.LabelKeys = sortedKeys(keys)
	for _, g := range groupOrder {
		if groups[g] {
			n.Groups = append(n.Groups, g)
		}
	}
	return n
}
