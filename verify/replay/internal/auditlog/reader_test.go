package auditlog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReader reads the lines of plain and compressed logs, a line longer than the limit, and
// logs that stop being readable.
func TestReader(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 40)
	full := gzipped(t, "a\nb\n")
	tests := []struct {
		name string
		data []byte
		want []string // per line: its data, or "error: ..." and "unreadable" for a ReadError
	}{
		{"plain", []byte("a\nb\n"), []string{"a\n", "b\n"}},
		{"no final newline", []byte("a\nb"), []string{"a\n", "b"}},
		{"a blank line", []byte("a\n  \n"), []string{"a\n", "  \n"}},
		{"gzip", full, []string{"a\n", "b\n"}},
		{"too long", []byte("a\n" + long + "\nb\n"), []string{"a\n", "error: line longer than 16 bytes (at least 41): skipped", "b\n"}},
		{"gzip truncated", full[:len(full)-6], []string{"a\n", "b\n", "unreadable: compressed stream truncated: reading stopped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, closer, err := NewReader("log", bytes.NewReader(tt.data), 16)
			if err != nil {
				t.Fatal(err)
			}
			if closer != nil {
				defer closer.Close()
			}
			var got []string
			for n := 1; ; n++ {
				l, ok := r.Next()
				if !ok {
					break
				}
				if l.File != "log" || l.Num != n {
					t.Errorf("line %d is %s:%d", n, l.File, l.Num)
				}
				var re *ReadError
				switch {
				case errors.As(l.Err, &re):
					got = append(got, "unreadable: "+l.Err.Error())
				case l.Err != nil:
					got = append(got, "error: "+l.Err.Error())
				default:
					got = append(got, string(l.Data))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func ExampleDecode() {
	ev, err := Decode([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","verb":"delete","objectRef":{"resource":"pods","namespace":"shop","name":"web-1"},"responseStatus":{"code":200}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name, ev.Code(), ev.Final())
	_, err = Decode([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1"`))
	fmt.Println(err)
	// Output:
	// delete pods shop web-1 200 true
	// truncated JSON (46 bytes)
}
