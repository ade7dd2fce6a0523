package export_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// fuzzRead reads any bytes as the format: the reader never panics, and every line is an
// event's JSON or an error, of a line from 1; a read error ends the file; a GKE event, which
// the reader writes, decodes or is reported as the replay's decoder reports a line that is
// not JSON; there are not more lines than the input could hold. The seeds
// are the first events of a recorded log wrapped in the format, and envelopes cut and broken.
func fuzzRead(f *testing.F, format export.Format) {
	log := readLog(f, recorded[0])
	var short []byte
	for i, l := range bytes.SplitAfter(log, []byte("\n")) {
		if i == 12 {
			break
		}
		short = append(short, l...)
	}
	wraps := []export.Format{format}
	switch format {
	case export.GKE:
		wraps = append(wraps, exporttest.GKESink)
		// A sink's entries pretty-printed (the Logs Explorer's copy).
		if sink, err := exporttest.Wrap(exporttest.GKESink, short); err == nil {
			var pretty bytes.Buffer
			for _, entry := range bytes.Split(bytes.TrimSpace(sink), []byte("\n")) {
				json.Indent(&pretty, entry, "", "  ")
				pretty.WriteString("\n")
			}
			f.Add(pretty.Bytes())
		}
	case export.PrettyEvents, export.EventArray, export.ContainerLog:
		wraps = nil // no export's: its seeds are the caller's
	case export.CloudWatch:
		wraps = append(wraps, exporttest.EKSText)
	case export.CloudWatchS3:
		wraps = append(wraps, exporttest.EKSTail)
	case export.Firehose:
		// Extracted messages, one a line, and without a delimiter, one cut, another log's
		// lines among them.
		wraps = append(wraps, exporttest.FirehoseLines)
		lines := bytes.Split(bytes.TrimSpace(short), []byte("\n"))
		f.Add(bytes.Join([][]byte{lines[0], []byte("I0101 00:00:01.000000 1 x.go:1] klog"), append(lines[1][:len(lines[1])/2:len(lines[1])/2], "[Truncated...]"...), lines[2]}, nil))
	}
	for _, w := range wraps {
		data, err := exporttest.Wrap(w, short)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(bytes.ReplaceAll(data, []byte(`"`), []byte(`'`)))
	}
	f.Add([]byte("{}"))
	f.Add([]byte("[]"))
	f.Add([]byte("\x1f\x8b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Read as the replay reads, and as a search for the policies' names does (a Filter,
		// whose records the scanner passes over where it holds them whole: passOverHeld).
		for _, opts := range [][]export.Option{nil, {export.Filter([]byte("missionpolic"))}} {
			fuzzReadOnce(t, data, format, opts)
		}
	})
}

// fuzzReadOnce reads data in the format with the options opts and checks what the Reader hands
// over: numbered lines, each skipped, an error or data, none after a read error.
func fuzzReadOnce(t *testing.T, data []byte, format export.Format, opts []export.Option) {
	r, err := export.NewReader("fuzz", bytes.NewReader(data), format, 1<<16, opts...)
	if err != nil {
		return // a gzip header that does not open: the replay reports it
	}
	defer r.Close()
	n := 0
	ended := false
	for {
		l, ok := r.Next()
		if !ok {
			break
		}
		n++
		if ended {
			t.Fatalf("line %d after a read error", l.Num)
		}
		if l.Num < 1 {
			t.Fatalf("line number %d", l.Num)
		}
		if l.Skip != "" && (l.Err != nil || l.Data != nil) {
			t.Fatalf("line %d: skipped (%s), with data %q and error %v", l.Num, l.Skip, l.Data, l.Err)
		}
		if l.Skip == "" && !l.Duplicate && (l.Err == nil) == (l.Data == nil) {
			t.Fatalf("line %d: data %q and error %v", l.Num, l.Data, l.Err)
		}
		if errors.Is(l.Err, export.ErrInternal) {
			t.Fatalf("line %d: %v", l.Num, l.Err)
		}
		var re *auditlog.ReadError
		ended = errors.As(l.Err, &re)
		if l.Err == nil && l.Loss.Export == export.ExportGKE {
			if _, err := auditlog.Decode(l.Data); err != nil && json.Valid(l.Data) && !strings.Contains(err.Error(), "audit.k8s.io/v1 Event") {
				t.Fatalf("line %d: GKE's event %s does not decode: %v", l.Num, l.Data, err)
			}
		}
		if l.Err == nil && format == export.AzureLogAnalytics && bytes.HasPrefix(l.Data, []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1"`)) {
			// A row's event decodes, or the decoder names the field of a column's JSON
			// of the wrong type, or the row's objects are not JSON (checked by their
			// structure only).
			objects := bytes.Contains(l.Data, []byte(`"requestObject":`)) || bytes.Contains(l.Data, []byte(`"responseObject":`))
			if _, err := auditlog.Decode(l.Data); err != nil && !strings.Contains(err.Error(), "audit.k8s.io/v1 Event") && !strings.Contains(err.Error(), "Go struct field Event.") && !objects {
				t.Fatalf("line %d: the row's event %s does not decode: %v", l.Num, l.Data, err)
			}
		}
		if n > 2*len(data)+2 {
			t.Fatalf("%d lines from %d bytes", n, len(data))
		}
	}
}

func FuzzReadWebhook(f *testing.F) { fuzzRead(f, export.Webhook) }
func FuzzReadCloudWatch(f *testing.F) {
	// A Logs Insights query's results, which eks-cloudwatch reads too.
	f.Add([]byte(`{"results":[[{"field":"@timestamp","value":"2026-01-01 00:00:01.000"},{"field":"@message","value":"{\"kind\":\"Event\",\"auditID\":\"a\",\"stage\":\"ResponseComplete\"}"}]],"status":"Complete"}`))
	f.Add([]byte(`[{"@timestamp":"2026-01-01 00:00:01.000","@message":"{\"kind\":\"Event\",\"auditID\":\"a\",\"stage\":\"ResponseComplete\"}"}]`))
	f.Add([]byte("@timestamp,@message\n2026-01-01 00:00:01.000,\"{\"\"kind\"\":\"\"Event\"\",\"\"auditID\"\":\"\"a\"\",\"\"stage\"\":\"\"ResponseComplete\"\"}\"\n"))
	fuzzRead(f, export.CloudWatch)
}
func FuzzReadCloudWatchS3(f *testing.F) { fuzzRead(f, export.CloudWatchS3) }
func FuzzReadFirehose(f *testing.F)     { fuzzRead(f, export.Firehose) }
func FuzzReadAzureBlob(f *testing.F) {
	// Records pretty-printed, or in an array, which aks-blob reads too.
	f.Add([]byte("[\n  {\"category\": \"kube-audit\", \"properties\": {\"log\": \"{}\"}}\n]"))
	fuzzRead(f, export.AzureBlob)
}
func FuzzReadAzureEventHub(f *testing.F) { fuzzRead(f, export.AzureEventHub) }
func FuzzReadGKE(f *testing.F)           { fuzzRead(f, export.GKE) }

// FuzzReadPrettyEvents: events pretty-printed, as jq writes them without -c.
func FuzzReadPrettyEvents(f *testing.F) {
	var pretty bytes.Buffer
	for _, l := range seedEvents(f) {
		json.Indent(&pretty, l, "", "  ")
		pretty.WriteString("\nnot json\n")
	}
	f.Add(pretty.Bytes())
	fuzzRead(f, export.PrettyEvents)
}

// FuzzReadEventArray: events in an array, as jq -s writes them.
func FuzzReadEventArray(f *testing.F) {
	var arr bytes.Buffer
	arr.WriteString("[")
	for i, l := range seedEvents(f) {
		if i > 0 {
			arr.WriteString(",\n")
		}
		json.Indent(&arr, l, "  ", "  ")
	}
	arr.WriteString("]\n")
	f.Add(arr.Bytes())
	fuzzRead(f, export.EventArray)
}

// FuzzReadContainerLog: a container's log file, events cut in pieces among klog's lines.
func FuzzReadContainerLog(f *testing.F) {
	var file bytes.Buffer
	for _, l := range seedEvents(f) {
		file.WriteString("2026-11-21T12:35:37.465123456Z stderr F I1121 12:35:37.465123       1 server.go:1] x\n")
		for len(l) > 300 {
			fmt.Fprintf(&file, "2026-11-21T12:35:37.465123456Z stdout P %s\n", l[:300])
			l = l[300:]
		}
		fmt.Fprintf(&file, "2026-11-21T12:35:37.465123456Z stdout F %s\n", l)
	}
	f.Add(file.Bytes())
	fuzzRead(f, export.ContainerLog)
}
func FuzzReadAzureLogAnalytics(f *testing.F) {
	// The query API's own response too: tables, columns and rows of values.
	f.Add([]byte(`{"tables":[{"name":"PrimaryResult","columns":[{"name":"AuditId","type":"string"},{"name":"User","type":"dynamic"}],"rows":[["a","{\"username\":\"u\"}"],["b",""]]}]}`))
	fuzzRead(f, export.AzureLogAnalytics)
}

// FuzzDetect detects the format of any bytes, and reads them in it.
func FuzzDetect(f *testing.F) {
	for _, h := range []string{`{"kind":"Event"`, `{"records":[`, `[{"insertId":`, "2026-01-01T00:00:00Z {", `{"events":[{"logStreamName"`, `[{"AuditId":"a","Verb":`, `{"results":[[{"field":"@message","value":"{`, `[{"@timestamp":"2026-01-01 00:00:01.000","@message":"{`, "@timestamp,@message\n2026-01-01 00:00:01.000,\"{", "{\n  \"category\": \"kube-audit\",\n  \"properties\": {", "TenantId,\"TimeGenerated [UTC]\",AuditId,Verb\n", "insertId,logName,protoPayload.methodName\n"} {
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := export.NewReader("fuzz", bytes.NewReader(data), export.Auto, 1<<16)
		if err != nil {
			return
		}
		defer r.Close()
		for range 2*len(data) + 2 {
			if _, ok := r.Next(); !ok {
				return
			}
		}
		t.Fatalf("more lines than %d bytes hold", len(data))
	})
}

// FuzzUnquote holds the fast string decoding of the envelopes to encoding/json's: where it
// decodes, it decodes the same.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"a"`, `"\"kind\":\"Event\""`, `"\u00e9\ud83d\ude00\/\b\f\n\r\t"`, `"\ud800x"`, "\"\xff\"", `"\u12"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := export.Unquote(b)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("unquote(%q) = %q, but encoding/json: %v", b, got, err)
		}
		if string(got) != want {
			t.Fatalf("unquote(%q) = %q, encoding/json %q", b, got, want)
		}
	})
}

// seedEvents are the first twelve events of a recorded log, a fuzz target's seeds.
func seedEvents(f *testing.F) [][]byte {
	lines := bytes.Split(bytes.TrimSpace(readLog(f, recorded[0])), []byte("\n"))
	return lines[:min(12, len(lines))]
}
