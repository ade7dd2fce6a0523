package report_test

import (
	"context"
	"fmt"
	"io"
	"os"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay"
	"github.com/vapc-dev/vapc/verify/report"
)

// Replay a log with a report: the Builder observes the replay and takes its records, then
// writes the page.
func Example() {
	dir := "../../testdata/audit/kosmos-flapping/"
	set, _ := cel.ReadPaths(nil, dir+"policy.yaml")
	var ps []*admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range set.Policies {
		ps = append(ps, p.ValidatingAdmissionPolicy)
	}
	var bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range set.Bindings {
		bs = append(bs, b.ValidatingAdmissionPolicyBinding)
	}
	b, err := report.New(ps, bs)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := replay.New(ps, bs, replay.WithSnapshot(dir+"snapshot.yaml"), replay.WithObserver(b.Observer()))
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := os.Open(dir + "audit.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	sum, err := r.Run(context.Background(), []replay.Source{{Name: "audit.jsonl", Reader: f}}, b.Sink(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	d := b.Data(sum)
	for _, l := range d.Nodes.Lanes {
		for _, s := range l.Ready {
			fmt.Printf("%s Ready=%s for %ds\n", l.Node, s.V, (s.To-s.From)/1000)
		}
		for _, m := range l.Markers {
			fmt.Printf("%s: %s %s at +%ds: %v\n", l.Node, m.G, m.K, m.T/1000, m.N)
		}
	}
	if err := report.WriteHTML(io.Discard, d); err != nil {
		fmt.Println(err)
	}
	// Output:
	// kosmos-member1 Ready=True for 51s
	// kosmos-member1 Ready=Unknown for 400s
	// kosmos-member1 Ready=True for 7s
	// kosmos-member1: users delete at +192s: map[admit:1]
	// kosmos-member1: node-controller delete at +356s: map[deny:2]
	// kosmos-member1: controllers delete at +453s: map[admit:3]
}
