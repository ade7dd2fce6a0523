package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestShifted: a repetition moves the event's times, its resourceVersions (in objects,
// objectRefs and request URIs, but 0, which asks for any) past the log's, and its audit ID.
func TestShifted(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		rep            int
	}{
		{
			name: "the first repetition is the line as it is",
			in:   `{"auditID":"0123abcd-0000","stageTimestamp":"2026-01-01T00:00:00.000000Z","objectRef":{"resourceVersion":"42"}}`,
			want: `{"auditID":"0123abcd-0000","stageTimestamp":"2026-01-01T00:00:00.000000Z","objectRef":{"resourceVersion":"42"}}`,
		},
		{
			name: "times, versions and the audit ID",
			rep:  2,
			in:   `{"auditID":"0123abcd-0000","stageTimestamp":"2026-01-01T00:00:00.000000Z","objectRef":{"resourceVersion":"42"},"responseObject":{"metadata":{"resourceVersion":"43"}}}`,
			want: `{"auditID":"00000002-0000","stageTimestamp":"2026-01-01T00:02:00.000000Z","objectRef":{"resourceVersion":"2042"},"responseObject":{"metadata":{"resourceVersion":"2043"}}}`,
		},
		{
			name: "a query's version, and 0, which asks for any",
			rep:  1,
			in:   `{"auditID":"0123abcd-0000","requestURI":"/api/v1/pods?resourceVersion=0","objectRef":{"resourceVersion":"0"},"x":"/api/v1/nodes?resourceVersion=7\u0026watch=true"}`,
			want: `{"auditID":"00000001-0000","requestURI":"/api/v1/pods?resourceVersion=0","objectRef":{"resourceVersion":"0"},"x":"/api/v1/nodes?resourceVersion=1007\u0026watch=true"}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(shifted([]byte(tc.in), time.Duration(tc.rep)*time.Minute, uint64(tc.rep)*1000, tc.rep))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestRVSpan: the versions' shift is a power of ten above the log's greatest.
func TestRVSpan(t *testing.T) {
	lines := [][]byte{[]byte(`{"resourceVersion":"999"}`), []byte(`/x?resourceVersion=12`)}
	if got := rvSpan(lines); got != 1000 {
		t.Errorf("rvSpan = %d, want 1000", got)
	}
}
