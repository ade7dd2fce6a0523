package auditgen_test

import (
	"bytes"
	"fmt"

	"github.com/vapc-dev/vapc/internal/auditgen"
)

// Generate a small log and its starting snapshot.
func ExampleGenerate() {
	var log, snapshot bytes.Buffer
	st, err := auditgen.Generate(&log, auditgen.Config{Seed: 1, Events: 1000, Nodes: 20, SnapshotWriter: &snapshot})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Events, "events,", bytes.Count(log.Bytes(), []byte("\n")), "lines; snapshot starts with", string(snapshot.Bytes()[:14]))
	// Output: 1000 events, 1000 lines; snapshot starts with apiVersion: v1
}
