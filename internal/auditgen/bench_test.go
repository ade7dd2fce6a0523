package auditgen

import (
	"io"
	"testing"
)

// BenchmarkGenerate generates events at the default mix; bytes/s is the output rate.
func BenchmarkGenerate(b *testing.B) {
	const events = 20000
	var bytes int64
	b.ReportAllocs()
	for b.Loop() {
		st, err := Generate(io.Discard, Config{Seed: 1, Events: events})
		if err != nil {
			b.Fatal(err)
		}
		bytes = st.Bytes
	}
	b.SetBytes(bytes)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}
