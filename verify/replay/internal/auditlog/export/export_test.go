package export

// What the tests of package export_test use of the package's internals.
var Detect = detect

// ConcatenatedEvents is the format of events one after the other without delimiters.
const ConcatenatedEvents = concatenatedEvents

// SetReverseChunk sets the bytes of records a reverser holds in memory, and returns a func
// that restores it.
func SetReverseChunk(n int) (restore func()) {
	old := reverseChunk
	reverseChunk = n
	return func() { reverseChunk = old }
}

var DropMember = dropMember

var Unquote = unquote
