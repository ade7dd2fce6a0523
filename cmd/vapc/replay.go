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
	"github.com/vapc-dev/vapc/cel/manifest"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay"
	"github.com/vapc-dev/vapc/verify/report"
)

func init() {
	register("replay", verb{summary: "replay audit logs through policies: what would kube-apiserver have decided?", run: runReplay, flags: func() *flagSet { return new(replayFlags).flagSet(io.Discard, io.Discard) }})
}

type replayFlags struct {
	policies       stringList
	snapshots      stringList
	crds           stringList
	output         string
	failOn         string
	checkRecorded  bool
	maxLine        int
	maxMalformed   int
	report         string
	reportRedact   stringList
	enablePlugins  string
	disablePlugins string
	inputFormat    string
}

func runReplay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f replayFlags
	fs := f.flagSet(stdout, stderr)
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
	failOn, err := replay.ParseFailOn(f.failOn)
	if err != nil {
		return usagef("replay: --fail-on %v", err)
	}
	if f.maxMalformed < 0 {
		return usagef("replay: --max-malformed must be 0 or more, not %d", f.maxMalformed)
	}
	if err := replay.CheckInputFormat(f.inputFormat); err != nil {
		return usagef("replay: --input-format: %v", err)
	}
	plugins, err := replay.AdmissionPlugins(splitList(f.enablePlugins), splitList(f.disablePlugins))
	if err != nil {
		return usagef("replay: %v", err)
	}
	gate := replay.Gate{FailOn: failOn, CheckRecorded: f.checkRecorded, MaxMalformed: f.maxMalformed}
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
			return inputProblems(stderr, "replay: --crd", err)
		}
	}
	// Folders of --snapshot are expanded by the rule of every flag and verb.
	snapshots, err := manifest.Expand(f.snapshots...)
	if err != nil {
		return inputProblems(stderr, "replay: --snapshot", err)
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
		replay.WithResources(cat), replay.WithSnapshot(snapshots...),
		replay.WithCheckRecorded(f.checkRecorded), replay.WithMaxLineBytes(f.maxLine),
		replay.WithAdmissionPlugins(plugins),
		replay.WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList()),
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
		if len(snapshots) > 0 {
			// The replay reads the snapshot fast and words a YAML error without its column:
			// the manifest reader of the other flags places it.
			if _, perr := manifest.ReadPaths(nil, snapshots...); perr != nil {
				return inputProblems(stderr, "replay: --snapshot", perr)
			}
		}
		fmt.Fprintln(stderr, err)
		return &findingsError{"replay: the snapshot or the policies cannot be replayed"}
	}
	var sources []replay.Source
	for _, l := range logs {
		s := replay.Source{Name: l, Format: f.inputFormat}
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
	if err != nil && !sum.Partial {
		return err // the sink's: stdout could not be written
	}
	// The verdict is computed once; every output states it and the exit code follows it.
	v := sum.Decide(gate)
	if rep != nil {
		// The report states the verdict too: Data reads it from the summary.
		if err := report.WriteFile(f.report, rep.Data(sum)); err != nil {
			return err
		}
	}
	switch f.output {
	case "text":
		err = replay.WriteText(stdout, sum)
	case "jsonl":
		err = replay.WriteJSONLEnd(stdout, sum)
		fmt.Fprintf(stderr, "vapc replay: %d lines, %d requests: %d evaluated (admit %d, deny %d, indeterminate %d), %d changed, %d malformed lines, %d disagreements\n",
			sum.Lines, sum.Requests, sum.Evaluated, sum.Admit, sum.Deny, sum.Evaluated-sum.Admit-sum.Deny, sum.Changed, sum.MalformedCount, len(sum.Disagreements))
	case "junit":
		err = replay.WriteJUnit(stdout, sum)
	}
	if err != nil {
		return err
	}
	switch {
	case v.Partial:
		return &interruptedError{fmt.Sprintf("replay: interrupted after %d lines: the outputs are partial", sum.Lines)}
	case !v.Pass:
		return &findingsError{"replay: " + v.String()}
	}
	return nil
}

// readReplayPolicies reads the policies and bindings to replay, and refuses them (a findings
// error, exit 1 as in vapc check, the diagnostics on stderr) when they cannot be read or kube-apiserver would refuse to
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
		return nil, &findingsError{fmt.Sprintf("replay: %d errors in the policies and bindings: kube-apiserver would not create them (vapc check tells more)", len(refused))}
	}
	if len(set.Policies) == 0 && len(set.MutatingPolicies) == 0 {
		return nil, &findingsError{fmt.Sprintf("replay: no ValidatingAdmissionPolicy or MutatingAdmissionPolicy in %s: nothing to replay", strings.Join(paths, ", "))}
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

// flagSet defines the flags of vapc replay into f.
func (f *replayFlags) flagSet(stdout, stderr io.Writer) *flagSet {
	fs := newFlagSet("replay", stdout, stderr,
		"usage: vapc replay --policies DIR [--snapshot FILE] [--report FILE.html] AUDIT.LOG[.gz]|- ...")
	fs.Var(&f.policies, "policies", "file or folder of ValidatingAdmissionPolicies and bindings (repeatable)")
	fs.Var(&f.snapshots, "snapshot", "file or folder of cluster objects (kubectl get -o yaml|json) the log starts from (repeatable)")
	fs.Var(&f.crds, "crd", "CustomResourceDefinition file for custom kinds the snapshot and the log do not define (repeatable)")
	fs.StringVar(&f.output, "output", "text", "output format: text, jsonl or junit")
	fs.choices("output", "text", "jsonl", "junit")
	fs.StringVar(&f.failOn, "fail-on", "", "exit 1 when a request would be denied (deny), warned or denied (warn), or decided otherwise than recorded (any-change)")
	fs.choices("fail-on", "deny", "warn", "any-change")
	fs.BoolVar(&f.checkRecorded, "check-recorded", false, "compare the log's own verdicts with the predictions and exit 1 on any disagreement")
	fs.IntVar(&f.maxLine, "max-line-bytes", replay.DefaultMaxLineBytes, "longest log line read; longer lines are reported as malformed")
	fs.IntVar(&f.maxMalformed, "max-malformed", 0, "malformed lines tolerated before the replay fails (a log cut short or unreadable always fails it)")
	fs.StringVar(&f.report, "report", "", "also write an HTML report of the replay (node, eviction and decision timelines) to this file")
	fs.StringVar(&f.enablePlugins, "enable-admission-plugins", "", "built-in admission plugins the cluster enables beyond kube-apiserver's defaults, comma-separated as kube-apiserver takes them")
	fs.StringVar(&f.disablePlugins, "disable-admission-plugins", "", "built-in admission plugins the cluster disables of kube-apiserver's defaults, comma-separated")
	fs.StringVar(&f.inputFormat, "input-format", "auto", "how the audit logs are wrapped, detected per file by default: "+strings.Join(replay.InputFormats(), ", ")+
		" (the log backend's lines, the webhook backend's EventLists, EKS's CloudWatch Logs, AKS's diagnostic settings, GKE's Cloud Logging: see the README, Where your audit log is)")
	fs.choices("input-format", replay.InputFormats()...)
	fs.Var(&f.reportRedact, "report-redact", "GROUP/RESOURCE (RESOURCE for the core group) whose values the report replaces by their sizes, as it does for secrets (repeatable)")
	return fs
}

// splitList splits a comma-separated flag value, as kube-apiserver splits its plugin lists.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
