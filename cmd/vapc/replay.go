package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay"
	"github.com/vapc-dev/vapc/verify/report"
)

func init() {
	register("replay", verb{summary: "replay audit logs through policies: what would kube-apiserver have decided?", run: runReplay})
}

type replayFlags struct {
	policies      stringList
	snapshots     stringList
	crds          stringList
	output        string
	failOn        string
	checkRecorded bool
	maxLine       int
	report        string
	reportRedact  stringList
}

func runReplay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f replayFlags
	fs := newFlagSet("replay", stderr,
		"usage: vapc replay --policies DIR [--snapshot FILE] [--report FILE.html] AUDIT.LOG[.gz]|- ...")
	fs.Var(&f.policies, "policies", "file or folder of ValidatingAdmissionPolicies and bindings (repeatable)")
	fs.Var(&f.snapshots, "snapshot", "file or folder of cluster objects (kubectl get -o yaml|json) the log starts from (repeatable)")
	fs.Var(&f.crds, "crd", "CustomResourceDefinition file for custom kinds the snapshot and the log do not define (repeatable)")
	fs.StringVar(&f.output, "output", "text", "output format: text, jsonl or junit")
	fs.StringVar(&f.failOn, "fail-on", "", "exit 1 when a request would be denied (deny), warned or denied (warn), or decided otherwise than recorded (any-change)")
	fs.BoolVar(&f.checkRecorded, "check-recorded", false, "compare the log's own verdicts with the predictions and exit 1 on any disagreement")
	fs.IntVar(&f.maxLine, "max-line-bytes", replay.DefaultMaxLineBytes, "longest log line read; longer lines are reported as malformed")
	fs.StringVar(&f.report, "report", "", "also write an HTML report of the replay (node, eviction and decision timelines) to this file")
	fs.Var(&f.reportRedact, "report-redact", "GROUP/RESOURCE (RESOURCE for the core group) whose values the report replaces by their sizes, as it does for secrets (repeatable)")
	logs, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(f.policies) == 0:
		fs.Usage()
		return usagef("replay: --policies is required")
	case len(logs) == 0:
		fs.Usage()
		return usagef("replay: no audit logs given")
	}
	switch f.output {
	case "text", "jsonl", "junit":
	default:
		return usagef("replay: --output must be text, jsonl or junit, not %q", f.output)
	}
	switch f.failOn {
	case "", "deny", "warn", "any-change":
	default:
		return usagef("replay: --fail-on must be deny, warn or any-change, not %q", f.failOn)
	}
	stdinUses := 0
	for _, p := range append(append([]string{}, f.policies...), logs...) {
		if p == "-" {
			stdinUses++
		}
	}
	if stdinUses > 1 {
		return usagef("replay: - (stdin) can be given only once")
	}
	for _, in := range []struct {
		what  string
		paths []string
	}{{"replay: --policies", f.policies}, {"replay: --snapshot", f.snapshots}, {"replay: --crd", f.crds}, {"replay", logs}} {
		if err := statInputs(in.what, in.paths...); err != nil {
			return err
		}
	}
	for _, l := range logs {
		if info, err := os.Stat(l); err == nil && info.IsDir() {
			return usagef("replay: %s is a directory: give the audit log files", l)
		}
	}
	redacted, err := report.ParseResources(f.reportRedact)
	if err != nil {
		return usagef("replay: --report-redact: %v", err)
	}
	if len(redacted) > 0 && f.report == "" {
		return usagef("replay: --report-redact needs --report")
	}
	if f.report != "" {
		// Before the replay, which may take minutes: the report goes in a folder that is there.
		if info, err := os.Stat(filepath.Dir(f.report)); err != nil || !info.IsDir() {
			return usagef("replay: --report %s: no folder %s to write it in", f.report, filepath.Dir(f.report))
		}
	}

	cat, err := vapcschema.Builtin(verify.KubernetesVersion)
	if err != nil {
		return &internalError{err}
	}
	if len(f.crds) > 0 {
		if err := cat.LoadCRDs(f.crds...); err != nil {
			return usagef("replay: --crd: %v", err)
		}
	}
	set, err := readReplayPolicies(stdin, stderr, cat, f.policies)
	if err != nil {
		return err
	}
	var policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range set.Policies {
		policies = append(policies, p.ValidatingAdmissionPolicy)
	}
	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range set.Bindings {
		bindings = append(bindings, b.ValidatingAdmissionPolicyBinding)
	}
	opts := []replay.Option{
		replay.WithResources(cat), replay.WithSnapshot(f.snapshots...),
		replay.WithCheckRecorded(f.checkRecorded), replay.WithMaxLineBytes(f.maxLine),
	}
	if isTerminal(stderr) {
		opts = append(opts, replay.WithProgress(time.Second, func(p replay.Progress) {
			secs := p.Elapsed.Seconds()
			if secs <= 0 {
				secs = 1e-9
			}
			fmt.Fprintf(stderr, "\r%d lines, %.1f MB read, %.0f lines/s   ", p.Lines, float64(p.Bytes)/(1<<20), float64(p.Lines)/secs)
		}))
	}
	var rep *report.Builder
	if f.report != "" {
		rep, err = report.New(policies, bindings, report.WithInputs(logs, f.policies, f.snapshots), report.WithRedact(redacted...))
		if err != nil {
			return usagef("replay: --report: %v", err)
		}
		opts = append(opts, replay.WithObserver(rep.Observer()))
	}
	r, err := replay.New(policies, bindings, opts...)
	if err != nil {
		return usagef("replay: %v", err)
	}
	var sources []replay.Source
	for _, l := range logs {
		s := replay.Source{Name: l}
		if l == "-" {
			s.Reader = stdin
		}
		sources = append(sources, s)
	}
	var sink func(*replay.Record) error
	if f.output == "jsonl" {
		sink = replay.JSONLWriter(stdout)
	}
	if rep != nil {
		sink = rep.Sink(sink)
	}
	sum, err := r.Run(ctx, sources, sink)
	if isTerminal(stderr) {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return err
	}
	if rep != nil {
		if err := report.WriteFile(f.report, rep.Data(sum)); err != nil {
			return err
		}
	}
	failed := func(b *replay.BindingSummary) bool {
		switch f.failOn {
		case "warn":
			return b.Deny > 0 || b.Warn > 0
		case "any-change", "":
			return b.Deny > 0
		}
		return b.Deny > 0
	}
	switch f.output {
	case "text":
		if err := replay.WriteText(stdout, sum); err != nil {
			return err
		}
	case "jsonl":
		fmt.Fprintf(stderr, "vapc replay: %d lines, %d requests: %d evaluated (admit %d, deny %d, indeterminate %d), %d changed, %d malformed lines, %d disagreements\n",
			sum.Lines, sum.Requests, sum.Evaluated, sum.Admit, sum.Deny, sum.Evaluated-sum.Admit-sum.Deny, sum.Changed, sum.MalformedCount, len(sum.Disagreements))
	case "junit":
		if err := replay.WriteJUnit(stdout, sum, failed); err != nil {
			return err
		}
	}
	var why []string
	if f.checkRecorded && len(sum.Disagreements) > 0 {
		why = append(why, fmt.Sprintf("%d disagreements with the recorded verdicts", len(sum.Disagreements)))
	}
	switch f.failOn {
	case "deny":
		if sum.Deny > 0 {
			why = append(why, fmt.Sprintf("%d requests would be denied", sum.Deny))
		}
	case "warn":
		if sum.Deny > 0 || sum.Warn > 0 {
			why = append(why, fmt.Sprintf("%d requests would be denied, %d warned", sum.Deny, sum.Warn))
		}
	case "any-change":
		if sum.Changed > 0 {
			why = append(why, fmt.Sprintf("%d requests would be decided otherwise than recorded", sum.Changed))
		}
	}
	if len(why) > 0 {
		return &findingsError{"replay: " + strings.Join(why, ", ")}
	}
	return nil
}

// readReplayPolicies reads the policies and bindings to replay, and refuses them (a usage
// error, the diagnostics on stderr) when they cannot be read or kube-apiserver would refuse to
// create one of them, with the create-time validation of vapc check: a replay of policies the
// server cannot hold would predict what no cluster decides. It warns, on stderr, of what the
// server accepts but makes no sense in a replay: a binding whose policy is not there, a policy
// without binding, a document that is neither.
func readReplayPolicies(stdin io.Reader, stderr io.Writer, cat *vapcschema.Catalog, paths []string) (*cel.Set, error) {
	set, diags := cel.ReadPaths(stdin, paths...)
	checker, err := cel.NewChecker(cel.WithKubernetesVersion(verify.KubernetesVersion), cel.WithCatalog(cat))
	if err != nil {
		return nil, &internalError{err}
	}
	diags = append(diags, checker.Check(set)...)
	var refused, warnings cel.Diagnostics
	for _, d := range diags {
		switch {
		case d.Severity == cel.Error && (d.Category == cel.CategoryInput || d.Category == cel.CategoryCreate):
			refused = append(refused, d)
		case d.Severity == cel.Warning && d.Category == cel.CategoryInput:
			warnings = append(warnings, d) // the loader's; the checker's lints are vapc check's
		}
	}
	for _, d := range set.Others {
		if d.GroupVersionKind().Group == "vapc.dev" {
			continue // vapc's own configuration (policies/settings), as vapc check does
		}
		warnings = append(warnings, cel.Diagnostic{
			Pos: d.Pos(), Severity: cel.Warning, Category: cel.CategoryInput,
			Message: fmt.Sprintf("%s %s is not a ValidatingAdmissionPolicy or ValidatingAdmissionPolicyBinding: ignored (cluster objects go in --snapshot)", d.GroupVersionKind().GroupVersion(), d.Object.GetKind()),
		})
	}
	for _, b := range set.OrphanBindings() {
		warnings = append(warnings, cel.Diagnostic{
			Pos: b.Source.FieldPos("spec.policyName"), Field: "spec.policyName", Severity: cel.Warning, Category: cel.CategoryLint,
			Object:  "ValidatingAdmissionPolicyBinding/" + b.Name,
			Message: fmt.Sprintf("binding %q: policy %q is not among --policies: the binding decides nothing", b.Name, b.Spec.PolicyName),
		})
	}
	for _, p := range set.UnboundPolicies() {
		warnings = append(warnings, cel.Diagnostic{
			Pos: p.Source.FieldPos("metadata.name"), Field: "metadata.name", Severity: cel.Warning, Category: cel.CategoryLint,
			Object:  "ValidatingAdmissionPolicy/" + p.Name,
			Message: fmt.Sprintf("policy %q has no binding among --policies: it decides nothing", p.Name),
		})
	}
	all := append(refused, warnings...)
	all.Sort()
	for _, d := range all {
		fmt.Fprintln(stderr, d.String())
	}
	if len(refused) > 0 {
		return nil, usagef("replay: %d errors in the policies and bindings: kube-apiserver would not create them (vapc check tells more)", len(refused))
	}
	if len(set.Policies) == 0 {
		return nil, usagef("replay: no ValidatingAdmissionPolicy in %s", strings.Join(paths, ", "))
	}
	return set, nil
}

// isTerminal says whether w is a terminal (progress is shown only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
