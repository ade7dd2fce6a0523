package replay

// readError is why a log could not be read to its end: it cannot be opened, its gzip stream is
// truncated or corrupt, or a read failed. The line reader reports it as the last line of the
// log; the summary counts it as malformed and lists it as Unreadable, which fails the replay
// whatever the gate tolerates of malformed lines.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }
