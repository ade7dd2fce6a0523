package replay

// The final records a replay has read, by audit ID: one read twice is an export's duplicate
// delivery (the same event) or malformed (another event), see Replayer.line.

// recentIDs remembers the last audit IDs whose final record was read, to find a final record
// read twice.
type recentIDs struct {
	// An audit ID is a UUID (the apiserver's, or what a client sent in Audit-ID): its 16
	// bytes are the key; another string is kept as it is.
	uuids map[[16]byte]finalRef
	other map[string]finalRef
	ring  []recentID
	next  int
}

// finalRef is where a final record was read, and the hash of its line.
type finalRef struct {
	lineRef
	sum uint64
}

type recentID struct {
	uuid  [16]byte
	other string
	isSet bool
}

const maxRecentIDs = 1 << 16

// add records the ID read at where; dup says it was read before, at first.
func (r *recentIDs) add(id string, where finalRef) (first finalRef, dup bool) {
	if r.ring == nil {
		r.uuids = map[[16]byte]finalRef{}
		r.other = map[string]finalRef{}
		r.ring = make([]recentID, maxRecentIDs)
	}
	var key recentID
	if u, ok := parseUUID(id); ok {
		key.uuid = u
	} else {
		key.other = id
	}
	key.isSet = true
	if first, ok := r.lookup(key); ok {
		return first, true
	}
	if old := r.ring[r.next]; old.isSet {
		if old.other != "" {
			delete(r.other, old.other)
		} else {
			delete(r.uuids, old.uuid)
		}
	}
	r.ring[r.next] = key
	r.next = (r.next + 1) % len(r.ring)
	if key.other != "" {
		r.other[key.other] = where
	} else {
		r.uuids[key.uuid] = where
	}
	return finalRef{}, false
}

func (r *recentIDs) lookup(k recentID) (finalRef, bool) {
	if k.other != "" {
		l, ok := r.other[k.other]
		return l, ok
	}
	l, ok := r.uuids[k.uuid]
	return l, ok
}

// parseUUID reads a UUID in its canonical text form, 8-4-4-4-12 lowercase hexadecimal digits
// (the apiserver's own); another form is not one, so that two IDs are the same key only if
// they are the same string.
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if s[i] == '-' {
			i--
			continue
		}
		hi, ok1 := hexDigit(s[i])
		lo, ok2 := hexDigit(s[i+1])
		if !ok1 || !ok2 {
			return u, false
		}
		u[j] = hi<<4 | lo
		j++
	}
	return u, j == 16
}

// hexDigit is the value of a lowercase hexadecimal digit: an uppercase one makes the ID
// another string (see parseUUID).
func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
