package cel

import (
	"os"
	"testing"
)

// BenchmarkCheckKosmosGuard measures a full check of the Kosmos guard: create-time validation,
// type checking against Pod and Node, and cost estimation.
func BenchmarkCheckKosmosGuard(b *testing.B) {
	data, err := os.ReadFile("../testdata/check/valid-kosmos-guard.yaml")
	if err != nil {
		b.Fatal(err)
	}
	checker, err := NewChecker()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		set, diags := ReadPaths(nil, "../testdata/check/valid-kosmos-guard.yaml")
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		if ds := checker.Check(set); ds.HasErrors() {
			b.Fatal(ds)
		}
	}
	b.SetBytes(int64(len(data)))
}

// BenchmarkCheckRecordedPolicies measures a check of the seven policies of the recorded log a
// (verify/replay/testdata/recorded/a), several of the same kinds and params: what a replay of
// it checks before its first event.
func BenchmarkCheckRecordedPolicies(b *testing.B) {
	const path = "../verify/replay/testdata/recorded/a/policies.yaml"
	checker, err := NewChecker()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		set, diags := ReadPaths(nil, path)
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		checker.Check(set)
	}
}
