package cel

import (
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in, binary, compat, err string
	}{
		{in: "1.37", binary: "1.37", compat: "1.36"},
		{in: "v1.37", binary: "1.37", compat: "1.36"},
		{in: "1.37.2", binary: "1.37", compat: "1.36"},
		{in: "1.30", binary: "1.30", compat: "1.29"},
		{in: "1.29", err: "unsupported Kubernetes version"},
		{in: "1.38", err: "unsupported Kubernetes version"},
		{in: "2.0", err: "unsupported Kubernetes version"},
		{in: "latest", err: "invalid Kubernetes version"},
		{in: "", err: "invalid Kubernetes version"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseVersion(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseVersion(%q) error = %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseVersion(%q) = %v", tc.in, err)
			}
			if got := v.String(); got != tc.binary {
				t.Errorf("ParseVersion(%q).Binary = %s, want %s", tc.in, got, tc.binary)
			}
			if got := v.Compatibility.String(); got != tc.compat {
				t.Errorf("ParseVersion(%q).Compatibility = %s, want %s", tc.in, got, tc.compat)
			}
		})
	}
}
