package replay

import (
	"path/filepath"
	"testing"
)

// TestPreconditionOfACreate: an update that created its lease (201: leader election after the
// lease was deleted, with the version it had read before) was checked against no version
// (Store.Update creates before it compares them), so the version its body gives orders it
// against no other write. Here W1 (line 3) recreates the lease a DELETE (line 6) removed,
// concurrently with W2 (line 4), whose body asked for a later version than W1's: taking W1 as
// committed first made the patch at line 5 read W2's holder (b), likely deny, where the server
// read W1's fresh lease and admitted. The patch's old object is not known.
func TestPreconditionOfACreate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "precondition-created")
	recs := replayRecording(t, filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.jsonl"))
	rec := recs["00000000-0000-0000-0000-000000000005"]
	if rec == nil {
		t.Fatal("the patch at line 5 has no record")
	}
	if rec.Decision != DecisionIndeterminate || rec.Reason != ReasonOldObjectUnknown {
		t.Errorf("line 5: %s, want indeterminate old-object-unknown (the server admitted)", describeRecord(rec))
	}
}
