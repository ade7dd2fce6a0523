package source

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// event is a line of the log backend's with the audit ID id, completed at the second at.
func event(id string, at int) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":"ResponseComplete","requestURI":"/api/v1/namespaces","verb":"list","user":{"username":"u"},"responseStatus":{"code":200},"stageTimestamp":"2026-11-22T10:00:%02d.000000Z"}`, id, at)
}

// ids are the audit IDs of the lines, "?" for one that is not an event, "!" for an error.
func ids(t *testing.T, lines []auditlog.Line) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		switch {
		case l.Err != nil:
			out = append(out, "!"+filepath.Base(l.File))
		default:
			ev, err := auditlog.Decode(l.Data)
			if err != nil {
				out = append(out, "?")
				continue
			}
			out = append(out, ev.AuditID)
		}
	}
	return out
}

// readIDs are the ids of the lines Lines hands over of the sources.
func readIDs(t *testing.T, srcs []Source) []string {
	t.Helper()
	return readIDsWith(t, srcs, 1<<20, nil)
}

// readIDsWith is readIDs with lines up to maxLine bytes, calling each (when set) as each line
// is handed over (to count the files open then).
func readIDsWith(t *testing.T, srcs []Source, maxLine int, each func()) []string {
	t.Helper()
	var lines []auditlog.Line
	if err := Lines(context.Background(), srcs, maxLine, func(l auditlog.Line) bool {
		l.Data = bytes.Clone(l.Data)
		lines = append(lines, l)
		if each != nil {
			each()
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return ids(t, lines)
}

func write(t *testing.T, dir, name string, gz bool, lines ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	data := []byte(strings.Join(lines, "\n") + "\n")
	if gz {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
		data = b.Bytes()
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLines: one log's lines keep their order; several logs interleave by the time their events
// completed, ties to the log given first, a line that is not an event at once; a log that
// cannot be opened is its one error line.
func TestLines(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a.log", false, event("a1", 1), event("a3", 3), event("a5", 5))
	b := write(t, dir, "b.log.gz", true, event("b2", 2), event("b3", 3), "not json", event("b6", 6))
	unordered := write(t, dir, "c.log", false, event("c9", 9), event("c1", 1))
	for _, tc := range []struct {
		name    string
		sources []Source
		want    []string
	}{
		{"one log as it is", []Source{{Name: unordered}}, []string{"c9", "c1"}},
		{"two logs interleave", []Source{{Name: a}, {Name: b}}, []string{"a1", "b2", "a3", "b3", "?", "a5", "b6"}},
		{"ties to the first given", []Source{{Name: b}, {Name: a}}, []string{"a1", "b2", "b3", "?", "a3", "a5", "b6"}},
		{"a log that cannot be opened", []Source{{Name: filepath.Join(dir, "missing.log")}, {Name: a}}, []string{"!missing.log", "a1", "a3", "a5"}},
		{"a reader", []Source{{Name: "-", Reader: strings.NewReader(event("s1", 1) + "\n")}}, []string{"s1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, readIDs(t, tc.sources)); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFilteredLines: a filtered export's records that do not hold the filter are passed over
// (lines with Skip), and an export's file whose bytes do not hold it is not read at all; AKS's
// records are passed over where each holds an event whole, and an event AKS cut into pieces
// that holds it in its last is found; a log backend's file read on its own hands over the lines
// that hold it only (grepReader).
func TestFilteredLines(t *testing.T) {
	dir := t.TempDir()
	needle := []byte("admissionpolic")
	policy := strings.Replace(event("p", 2), "/api/v1/namespaces", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", 1)
	with := strings.Join([]string{event("a", 1), policy, event("b", 3)}, "\n") + "\n"
	without := strings.Join([]string{event("a", 1), event("b", 3)}, "\n") + "\n"
	// An event longer than AKS's 16 KiB pieces, the filter in its last: the records before it
	// do not hold it.
	long := strings.Replace(event("l", 2), `"verb"`, `"userAgent":"`+strings.Repeat("x", 20<<10)+` admissionpolicy","verb"`, 1)
	cut := strings.Join([]string{event("a", 1), long, event("b", 3)}, "\n") + "\n"
	wrapped := func(name string, f export.Format, log string) string {
		t.Helper()
		data, err := exporttest.Wrap(f, []byte(log))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name string
		path string
		want []string // audit IDs of the lines not skipped, "-" for one skipped, sorted (an export's reader holds a skipped line among the events around it, not in its place); a record passed over undecoded is not handed over
	}{
		{"a webhook export holding it", wrapped("with.webhook", export.Webhook, with), []string{"p"}},
		{"a webhook export without it", wrapped("without.webhook", export.Webhook, without), nil},
		{"a GKE sink without it", wrapped("without.gke", exporttest.GKESink, without), nil},
		{"AKS's records, each an event whole", wrapped("without.aks", export.AzureBlob, without), nil},
		{"AKS's pieces of an event, holding it in the last", wrapped("cut.aks", export.AzureBlob, cut), []string{"l"}},
		{"a log backend's file without it", write(t, dir, "without.log", false, event("a", 1), event("b", 3)), nil},
		{"a log backend's file holding it", write(t, dir, "with.log", false, event("a", 1), policy, event("b", 3)), []string{"p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			if err := Lines(context.Background(), Filtered([]Source{{Name: tc.path}}, needle), 1<<20, func(l auditlog.Line) bool {
				if l.Skip != "" {
					got = append(got, "-")
					return true
				}
				got = append(got, ids(t, []auditlog.Line{l})...)
				return true
			}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInTimeOrder: rotated logs given newest first are read oldest first; a reader, or a log
// whose first lines hold no event time, leaves the order as given.
func TestInTimeOrder(t *testing.T) {
	dir := t.TempDir()
	newest := write(t, dir, "audit.log", false, event("n", 30))
	older := write(t, dir, "audit.log.1.gz", true, event("o", 20))
	oldest := write(t, dir, "audit.log.2", false, event("x", 10))
	untimed := write(t, dir, "untimed.log", false, "not json")
	for _, tc := range []struct {
		name          string
		given         []Source
		want          []string
		wantReordered bool
	}{
		{"rotated, newest first", []Source{{Name: newest}, {Name: older}, {Name: oldest}}, []string{oldest, older, newest}, true},
		{"already in order", []Source{{Name: oldest}, {Name: newest}}, []string{oldest, newest}, false},
		{"a log without event times", []Source{{Name: newest}, {Name: untimed}}, []string{newest, untimed}, false},
		{"a reader", []Source{{Name: newest}, {Name: "-", Reader: strings.NewReader(event("s", 1))}}, []string{newest, "-"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, reordered := InTimeOrder(tc.given, 1<<20)
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if diff := cmp.Diff(tc.want, names); diff != "" || reordered != tc.wantReordered {
				t.Errorf("order (-want +got):\n%s\nreordered %v, want %v", diff, reordered, tc.wantReordered)
			}
		})
	}
}

// blocking is a reader whose Read waits until it is closed.
type blocking struct{ done chan struct{} }

func (b blocking) Read([]byte) (int, error) { <-b.done; return 0, io.EOF }

// TestInterruptible: a read that blocks (standard input) gives up when the context is canceled.
func TestInterruptible(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := blocking{make(chan struct{})}
	defer close(b.done)
	r := interruptible(ctx, b)
	errc := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 8))
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Read: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read did not give up when the context was canceled")
	}
}

// TestCountedFileReadBack: a file read with its bytes counted (a progress line's) is read as
// before: gcloud's array, newest first, in the order of its events, every byte counted once.
// That it stays a file to the readers that read it back by offsets (export.NewReader's
// readerAt) is held at compile time below: an array this small is reversed in memory either
// way, so no run tells the offsets from temporary files.
func TestCountedFileReadBack(t *testing.T) {
	t.Parallel()
	var log []string
	for i := range 5 {
		log = append(log, event(fmt.Sprintf("e%d", i), i))
	}
	wrapped, err := exporttest.Wrap(export.GKE, []byte(strings.Join(log, "\n")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gcloud.json")
	if err := os.WriteFile(path, wrapped, 0o644); err != nil {
		t.Fatal(err)
	}
	var read atomic.Int64
	var lines []auditlog.Line
	if err := Lines(context.Background(), []Source{{Name: path, Read: &read}}, 1<<20, func(l auditlog.Line) bool {
		l.Data = bytes.Clone(l.Data) // a line's data is the reader's until the next
		lines = append(lines, l)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"e0", "e1", "e2", "e3", "e4"}, ids(t, lines)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if read.Load() != int64(len(wrapped)) {
		t.Errorf("counted %d bytes of the file's %d", read.Load(), len(wrapped))
	}
	// What export.NewReader reads back by offsets, not through temporary files.
	var _ interface {
		io.ReaderAt
		io.Seeker
	} = countingFile{}
}

// TestManyFiles: the files of a day's export, each a few seconds of it, given newest first
// (an S3 export's objects, a webhook receiver's files), are read as one log in the time order of
// their events, with a few of them open at a time: InTimeOrder keeps each one's first event's
// time, and Lines opens it once the merge reaches that time. Opened from the start, each held
// a reader's buffers and the minutes of events its reorder window holds (1.5 GB for eight
// S3 objects of the cluster traffic x30). A log whose first line may be an event it cannot
// read (one that does not decode) is opened from the start, its line handed over first: what
// the replay takes it may have written is taken as of the log's beginning, as before. A log
// whose first lines hold no event leaves the logs in the order given, the others still opened
// so.
func TestManyFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		untimed bool
	}{{"ordered", false}, {"a log without events", true}} {
		t.Run(tc.name, func(t *testing.T) {
			const files, each = 20, 10 // an event a second
			base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
			dir := t.TempDir()
			var sources []Source
			var want []string
			for f := range files {
				var lines []string
				for i := range each {
					id := fmt.Sprintf("%02d-%d", f, i)
					at := base.Add(time.Duration(f*each+i) * time.Second)
					lines = append(lines, strings.Replace(event(id, 0), "2026-11-22T10:00:00.000000Z", at.Format("2006-01-02T15:04:05.000000Z"), 1))
					want = append(want, id)
				}
				format := export.CloudWatchS3
				if f%2 == 1 {
					format = export.Webhook
				}
				wrapped, err := exporttest.Wrap(format, []byte(strings.Join(lines, "\n")+"\n"))
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, fmt.Sprintf("%06d.gz", f))
				if err := os.WriteFile(path, wrapped, 0o644); err != nil {
					t.Fatal(err)
				}
				sources = append([]Source{{Name: path}}, sources...) // newest first
			}
			// A log backend's file whose first line does not decode, its event in the middle of the day.
			mid := base.Add(time.Duration(files*each/2)*time.Second + 500*time.Millisecond)
			unread := write(t, dir, "unread.log", false, "not json", strings.Replace(event("unread", 0), "2026-11-22T10:00:00.000000Z", mid.Format("2006-01-02T15:04:05.000000Z"), 1))
			sources = append(sources, Source{Name: unread})
			at := slices.Index(want, fmt.Sprintf("%02d-%d", files/2, 0)) + 1
			want = append([]string{"?"}, slices.Insert(want, at, "unread")...)
			// A log with no event: the logs are left in the order given, each still opened as the
			// merge reaches its first event.
			if tc.untimed {
				sources = append(sources, Source{Name: write(t, dir, "untimed.log", false, "not json")})
				want = append([]string{"?"}, want...)
			}

			const maxLine = 1 << 20
			ordered, _, _ := InTimeOrder(sources, maxLine)
			most := 0
			got := readIDsWith(t, ordered, maxLine, func() {
				n := 0
				for _, src := range ordered {
					n += opened(t, src.Name)
				}
				most = max(most, n)
			})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			// The unread log, open from the start, and a file from a second before its first event to
			// its end: three at a time at most.
			if most > 3 {
				t.Errorf("%d files were open at once, want at most 3 (of %d)", most, len(ordered))
			}
		})
	}
}

// TestOpenedAsEager: the lines Lines hands over of logs InTimeOrder opens as the merge
// reaches their first event are those it hands over with every log opened from the start,
// where the merge's time of a log's first line is not the one its event decodes to (written
// with a space after the colon, as Python's json.dumps writes it: no time for the merge; an
// annotation named stageTimestamp after the event's own), and in a pass for a filter, where
// an export's reader hands over an event its whole reading finds too late for its window.
func TestOpenedAsEager(t *testing.T) {
	dir := t.TempDir()
	at := func(id, stamp string) string {
		return strings.Replace(event(id, 0), "2026-11-22T10:00:00.000000Z", "2026-11-22T"+stamp+"Z", 1)
	}
	spaced := func(line string) string { return strings.Replace(line, `"stageTimestamp":"`, `"stageTimestamp": "`, 1) }
	annotated := func(line, stamp string) string {
		return strings.TrimSuffix(line, "}") + `,"annotations":{"stageTimestamp":"2026-11-22T` + stamp + `Z"}}`
	}
	webhook := func(name string, lines ...string) string {
		return write(t, dir, name, false, `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`+strings.Join(lines, ",")+`]}`)
	}
	compact := write(t, dir, "compact.log", false, at("a1", "10:00:01.000000"), at("a3", "10:00:03.000000"), at("a9", "10:00:09.000000"))
	for _, tc := range []struct {
		name    string
		sources []string
		filter  string
	}{
		{"spaced", []string{compact, write(t, dir, "spaced.log", false, spaced(at("b5", "10:00:05.000000")), spaced(at("b6", "10:00:06.000000")))}, ""},
		{"annotated", []string{compact, write(t, dir, "annotated.log", false, annotated(at("c5", "10:00:05.000000"), "09:00:00.000000"), at("c6", "10:00:06.000000"))}, ""},
		{"filtered", []string{
			webhook("a.json", at("a1", "10:00:10.000000"), at("a2", "10:06:00.000000"), at("a3-NEEDLE", "10:00:05.000000")),
			webhook("b.json", at("b1-NEEDLE", "10:00:07.000000")),
		}, "NEEDLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var given []Source
			for _, name := range tc.sources {
				given = append(given, Source{Name: name})
			}
			ordered, _, _ := InTimeOrder(given, 1<<20)
			eager := slices.Clone(ordered)
			for i := range eager {
				eager[i].first = time.Time{}
			}
			read := func(srcs []Source) []string {
				if tc.filter != "" {
					srcs = Filtered(srcs, []byte(tc.filter))
				}
				return readIDs(t, srcs)
			}
			if diff := cmp.Diff(read(eager), read(ordered)); diff != "" {
				t.Errorf("lines (-opened from the start +opened as the merge reaches them):\n%s", diff)
			}
		})
	}
}

// TestRenamedBeforeOpened: a log the merge opens as it reaches its first event, renamed by then
// and another file written at its name (a live log rotated as the replay reads it), is not
// read in its place: its one line is the error that says so, never the other file's events.
func TestRenamedBeforeOpened(t *testing.T) {
	dir := t.TempDir()
	older := write(t, dir, "audit-2026-11-22T10-00-20.000.log", false, event("o1", 1), event("o2", 2))
	current := write(t, dir, "audit.log", false, event("c30", 30), event("c31", 31))
	ordered, _, _ := InTimeOrder([]Source{{Name: current}, {Name: older}}, 1<<20)
	var got []auditlog.Line
	if err := Lines(context.Background(), ordered, 1<<20, func(l auditlog.Line) bool {
		if len(got) == 0 {
			if err := os.Rename(current, current+".1"); err != nil {
				t.Fatal(err)
			}
			write(t, dir, "audit.log", false, event("new", 40))
		}
		l.Data = bytes.Clone(l.Data)
		got = append(got, l)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"o1", "o2", "!audit.log"}, ids(t, got)); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if last := got[len(got)-1]; last.Err == nil || !strings.Contains(last.Err.Error(), "renamed or removed since the replay began") {
		t.Errorf("the renamed log's line: %v", last.Err)
	}
}
