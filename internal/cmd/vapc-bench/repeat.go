package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// runRepeat writes an audit log repeated, each repetition shifted in time past the one before
// and with audit IDs of its own: a recorded log's traffic at any size, for the replay benchmarks
// (a RequestResponse-heavy recording, a cluster's mixed traffic).
func runRepeat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("repeat",
		"usage: vapc-bench repeat --times N [-o FILE] AUDIT.LOG[.gz]\n\nWrites the log N times, each repetition's timestamps shifted past the one before (its span and a\nsecond), its resourceVersions past the log's last, and its audit IDs made its own.", stderr)
	times := fs.Int("times", 10, "how many times to write the log")
	out := fs.String("o", "-", "the file to write (- for standard output)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 || *times < 1 {
		fs.Usage()
		return usagef("repeat: give one audit log and --times of 1 or more")
	}
	data, err := readLog(rest[0])
	if err != nil {
		return fmt.Errorf("repeat: %w", err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	first, last, err := span(lines)
	if err != nil {
		return fmt.Errorf("repeat: %s: %w", rest[0], err)
	}
	shift := last.Sub(first) + time.Second
	rvs := rvSpan(lines)
	var w io.Writer = stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("repeat: %w", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	for i := 0; i < *times; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, l := range lines {
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			if _, err := bw.Write(shifted(l, time.Duration(i)*shift, uint64(i)*rvs, i)); err != nil {
				return fmt.Errorf("repeat: %w", err)
			}
		}
	}
	return bw.Flush()
}

// readLog reads a whole log, gunzipped.
func readLog(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return io.ReadAll(zr)
	}
	return data, nil
}

var (
	timestamp = regexp.MustCompile(`"(requestReceivedTimestamp|stageTimestamp)":"([^"]+)"`)
	auditID   = regexp.MustCompile(`"auditID":"([0-9a-f]{8})`)
	// A resourceVersion in an object, an objectRef or a list, or in a request's query.
	resourceVersion = regexp.MustCompile(`("resourceVersion":"|resourceVersion=)([0-9]+)`)
)

// rvSpan is a power of ten above every resourceVersion of the lines: a repetition's versions
// shifted by it follow the last one's, as etcd's revisions do.
func rvSpan(lines [][]byte) uint64 {
	var most uint64
	for _, l := range lines {
		for _, m := range resourceVersion.FindAllSubmatch(l, -1) {
			if n, err := strconv.ParseUint(string(m[2]), 10, 64); err == nil {
				most = max(most, n)
			}
		}
	}
	span := uint64(10)
	for span <= most {
		span *= 10
	}
	return span
}

// span is the first and last time the lines' events carry.
func span(lines [][]byte) (first, last time.Time, err error) {
	for _, l := range lines {
		for _, m := range timestamp.FindAllSubmatch(l, -1) {
			t, err := time.Parse(time.RFC3339Nano, string(m[2]))
			if err != nil {
				continue
			}
			if first.IsZero() || t.Before(first) {
				first = t
			}
			if t.After(last) {
				last = t
			}
		}
	}
	if first.IsZero() {
		return first, last, fmt.Errorf("no event time")
	}
	return first, last, nil
}

// shifted is the line with its event's times moved by d, its resourceVersions by rv (but 0,
// which asks for any version) and its audit ID's first eight hex digits replaced by the
// repetition's number (repetition 0 is the line as it is). Times inside the objects
// (creationTimestamp, conditions) stay: the replay orders and windows requests by the event's
// own times. The versions move so that a repetition's writes are later than the one's before,
// as a real cluster's are: versions that went back would have the replay take every write of
// the next repetition for one the log records late.
func shifted(line []byte, d time.Duration, rv uint64, rep int) []byte {
	if rep == 0 {
		return line
	}
	out := timestamp.ReplaceAllFunc(line, func(m []byte) []byte {
		sub := timestamp.FindSubmatch(m)
		t, err := time.Parse(time.RFC3339Nano, string(sub[2]))
		if err != nil {
			return m
		}
		v, _ := json.Marshal(t.Add(d).UTC().Format("2006-01-02T15:04:05.000000Z"))
		return append([]byte(`"`+string(sub[1])+`":`), v...)
	})
	out = resourceVersion.ReplaceAllFunc(out, func(m []byte) []byte {
		sub := resourceVersion.FindSubmatch(m)
		n, err := strconv.ParseUint(string(sub[2]), 10, 64)
		if err != nil || n == 0 {
			return m
		}
		return append(slices.Clip(sub[1]), strconv.FormatUint(n+rv, 10)...)
	})
	return auditID.ReplaceAll(out, []byte(fmt.Sprintf(`"auditID":"%08x`, rep)))
}
