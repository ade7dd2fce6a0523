package export

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
)

// containerLog is a container's log file as the kubelet's container runtime writes it
// (/var/log/pods/NAMESPACE_POD_UID/CONTAINER/N.log, the CRI logging format: "TIMESTAMP STREAM
// TAG MESSAGE" a line, STREAM stdout or stderr, TAG F for a whole line or the last piece of
// one, P for a piece of a longer line, which the runtime cuts at 16 KiB): where kube-apiserver
// writes its audit log to standard output (--audit-log-path=-), its own log, klog's, to
// standard error. The events are read in the file's order, each whole again from its pieces;
// the lines of standard error are counted and skipped. Detected, not named in Formats.
const containerLog Format = "container-log"

func init() { readers[containerLog] = readContainerLog }

// containerLogHead is how a line of a container's log file begins (k8s.io/cri-api
// pkg/apis/runtime/v1 and the kubelet's kuberuntime/logs: RFC 3339 with nanoseconds).
var containerLogHead = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}) (stdout|stderr) ([FP])( |$)`)

// stderrSkip says why a line of standard error in a container's log file is skipped.
const stderrSkip = "a line of kube-apiserver's standard error in its container's log file (its own log, klog's), not an audit event: the audit log goes to standard output (--audit-log-path=-)"

func readContainerLog(in input, yield func(record) bool) {
	var pieces []byte // the pieces of a line of standard output read so far
	first, size := 0, 0
	// A piece before the last of a line is no record: build returns the zero record for it.
	stopped := false
	handOver := func(rec record) bool {
		stopped = rec.line != 0 && !yield(rec)
		return !stopped
	}
	readLines(in, in.maxLine+256, handOver, func(text []byte, num int) record {
		text = bytes.TrimRight(text, "\r\n")
		m := containerLogHead.FindSubmatchIndex(text)
		if m == nil {
			return record{line: num, err: recordError(fmt.Sprintf("line %d", num), "", errors.New("not a line of a container's log file (TIMESTAMP STREAM TAG MESSAGE)"))}
		}
		msg := text[m[1]:]
		stream, tag := text[m[6]:m[7]], text[m[8]]
		if string(stream) == "stderr" {
			return record{line: num, skip: stderrSkip}
		}
		if size == 0 {
			if tag == 'F' && len(bytes.TrimSpace(msg)) == 0 {
				return record{} // a blank line, skipped as the log backend's are
			}
			first = num
		}
		size += len(msg)
		if size <= in.maxLine {
			pieces = append(pieces, msg...)
		}
		if tag == 'P' {
			return record{}
		}
		defer func() { pieces, size = pieces[:0], 0 }()
		if size > in.maxLine {
			return record{line: first, err: recordError(fmt.Sprintf("line %d", first), "", &errTooLong{max: in.maxLine, size: size})}
		}
		return record{data: append(getBuf(len(pieces)), pieces...), line: first}
	})
	if size > 0 && !stopped {
		// The file ends within a line: its last piece (F) is not there.
		yield(record{line: first, err: recordError(fmt.Sprintf("line %d", first), "", errors.New("the file ends within a line of standard output the container runtime cut in pieces (P): its last piece (F) is not there"))})
	}
}
