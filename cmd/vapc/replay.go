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
	"github.com/vapc-dev/vapc/internal/gctune"
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
	failOn         stringList
	strict         bool
	lag            time.Duration
	checkRecorded  bool
	gkeDryRuns     bool
	maxLine        int
	maxMalformed   int
	report         string
	reportRedact   stringList
	enablePlugins  string
	disablePlugins string
	quiet          bool
	progressEvery  time.Duration
	inputFormat    string
	throughout     bool
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
	if err := replayOutputs.check(f.output); err != nil {
		return err
	}
	failOn, err := replay.ParseFailOn(strings.Join(f.failOn, ","))
	if err != nil {
		return usagef("replay: --fail-on %v", err)
	}
	if f.progressEvery < 0 {
		return usagef("replay: --progress-interval must be 0 or more, not %s", f.progressEvery)
	}
	if f.maxMalformed < 0 {
		return usagef("replay: --max-malformed must be 0 or more, not %d", f.maxMalformed)
	}
	if f.lag < 0 {
		return usagef("replay: --informer-lag must be 0 or more, not %s", f.lag)
	}
	if err := replay.CheckInputFormat(f.inputFormat); err != nil {
		return usagef("replay: --input-format: %v", err)
	}
	plugins, err := replay.AdmissionPlugins(splitList(f.enablePlugins), splitList(f.disablePlugins))
	if err != nil {
		return usagef("replay: %v", err)
	}
	gate := replay.Gate{FailOn: failOn, Strict: f.strict, CheckRecorded: f.checkRecorded, MaxMalformed: f.maxMalformed}
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
	// A folder is the files under it (an export's tree of objects).
	if logs, err = replay.LogFiles(logs); err != nil {
		return usagef("replay: %s", pathError("", err))
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

	// The logs' files are searched ahead (replay.Prepare) while the policies and the
	// snapshot are read; standard input is read by the replay.
	var sources []replay.Source
	prog := newProgress(stderr, logs, f.progressEvery, f.quiet)
	for _, l := range logs {
		s := replay.Source{Name: l, Format: f.inputFormat}
		if l == "-" {
			s.Reader = stdin
		}
		if prog != nil {
			s.Read = &prog.read
		}
		sources = append(sources, s)
	}
	if !f.throughout {
		var release func()
		sources, release = replay.Prepare(ctx, sources)
		defer release()
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
	if n, ok := replay.InputSize(append(append([]string{}, logs...), snapshots...)); ok {
		gctune.Fit(n) // a small replay's heap collected before it grows to the default base
	}
	set, mapOrder, err := readReplayPolicies(stdin, stderr, cat, f.policies)
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
		replay.WithCheckRecorded(f.checkRecorded), replay.WithMaxLineBytes(f.maxLine), replay.WithGKEDryRunsLabelled(f.gkeDryRuns),
		replay.WithAdmissionPlugins(plugins), replay.WithLag(f.lag),
		replay.WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList()),
		replay.WithMapOrder(mapOrder),
	}
	if f.throughout {
		opts = append(opts, replay.WithPoliciesThroughout())
	}
	if prog != nil {
		opts = append(opts, prog.option())
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
	var sink func(*replay.Record) error
	if f.output == "jsonl" {
		sink = replay.JSONLWriter(stdout)
	}
	if rep != nil {
		sink = rep.Sink(sink)
	}
	sum, err := r.Run(ctx, sources, sink)
	prog.done()
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
// error, exit 1 as in vapc check, the diagnostics on stderr) when they cannot be read or
// kube-apiserver would refuse to create one. An expression that fails type checking for every
// kind its policy matches, which vapc check rejects, is a warning here: kube-apiserver creates
// its policy (status.typeChecking warns) and evaluates it, each request it reaches an error
// that failurePolicy decides unless a logical operator absorbs it (true || error is true), and
// a replay of a log must decide as the server did. A messageExpression's type error is a
// warning too, since the server answers with the message instead. It warns, on stderr, of what
// the server accepts but makes no sense in a replay: a binding whose policy is not there, a
// policy without binding, a document that is neither.
func readReplayPolicies(stdin io.Reader, stderr io.Writer, cat *vapcschema.Catalog, paths []string) (*cel.Set, cel.MapOrder, error) {
	set, diags := cel.ReadPaths(stdin, paths...)
	checker, err := cel.NewChecker(cel.WithKubernetesVersion(verify.KubernetesVersion), cel.WithCatalog(cat))
	if err != nil {
		return nil, cel.MapOrder{}, &internalError{err}
	}
	diags = append(diags, checker.Check(set)...)
	var refused, warnings cel.Diagnostics
	for _, d := range diags {
		switch {
		case d.Fatal() && d.Category == cel.CategoryType:
			d.Severity = cel.Warning
			d.Hint = strings.TrimPrefix(d.Hint+"; ", "; ") + "kube-apiserver creates the policy and evaluates it: a request it reaches is an error that failurePolicy decides, unless a logical operator absorbs it (vapc check rejects it)"
			warnings = append(warnings, d)
		case d.Fatal():
			refused = append(refused, d)
		case d.Severity == cel.Error:
			d.Severity = cel.Warning
			d.Hint = strings.TrimPrefix(d.Hint+"; ", "; ") + "kube-apiserver words the denial with the validation's message instead"
			warnings = append(warnings, d)
		case d.Severity == cel.Warning && d.Category == cel.CategoryInput:
			warnings = append(warnings, d) // the loader's; the checker's lints are vapc check's
		case d.Message == cel.MapOrderMessage && strings.HasPrefix(d.Field, "spec.auditAnnotations["):
			d.Hint = strings.TrimPrefix(d.Hint+"; ", "; ") + "the replay does not claim its value"
			warnings = append(warnings, d) // the lints that change what the replay says
		case d.Message == cel.MapOrderMessage && strings.HasSuffix(d.Field, ".messageExpression"):
			d.Hint = strings.TrimPrefix(d.Hint+"; ", "; ") + "the replay claims a failure's message only where the log holds the server's"
			warnings = append(warnings, d)
		case d.Message == cel.MapOrderMessage && (strings.HasPrefix(d.Field, "spec.validations[") || strings.HasPrefix(d.Field, "spec.matchConditions[")):
			d.Hint = strings.TrimPrefix(d.Hint+"; ", "; ") + "the replay decides the policy in the order the log's verdicts show, and where it cannot, not at all"
			warnings = append(warnings, d)
		}
	}
	for _, d := range set.Others {
		if d.GroupVersionKind().Group == "vapc.dev" {
			continue // vapc's own configuration (policies/settings), as vapc check does
		}
		warnings = append(warnings, cel.Diagnostic{
			Pos: d.Pos(), Severity: cel.Warning, Category: cel.CategoryInput,
			Message: fmt.Sprintf("%s %s is not an admission policy or binding: ignored (cluster objects go in --snapshot)", d.GroupVersionKind().GroupVersion(), d.Object.GetKind()),
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
		return nil, cel.MapOrder{}, &findingsError{"replay: " + refusal(refused)}
	}
	if len(set.Policies) == 0 && len(set.MutatingPolicies) == 0 {
		return nil, cel.MapOrder{}, &findingsError{fmt.Sprintf("replay: --policies %s holds no ValidatingAdmissionPolicy or MutatingAdmissionPolicy: nothing to replay. --policies reads %s; cluster objects go in --snapshot", strings.Join(paths, " "), cel.PolicyKinds)}
	}
	return set, checker.MapOrderOf(set, diags), nil
}

// refusal says why policies are refused, by what their fatal diagnostics are about: inputs
// that are not policies, what kube-apiserver would not create, expressions that cannot work.
func refusal(refused cel.Diagnostics) string {
	n := map[cel.Category]int{}
	for _, d := range refused {
		n[d.Category]++
	}
	var parts []string
	if n[cel.CategoryInput] > 0 {
		parts = append(parts, fmt.Sprintf("%d %s in the input", n[cel.CategoryInput], plural(n[cel.CategoryInput], "problem", "problems")))
	}
	if n[cel.CategoryCreate] > 0 {
		parts = append(parts, fmt.Sprintf("kube-apiserver would refuse to create them (%d %s)", n[cel.CategoryCreate], plural(n[cel.CategoryCreate], "error", "errors")))
	}
	if k := len(refused) - n[cel.CategoryInput] - n[cel.CategoryCreate]; k > 0 {
		parts = append(parts, fmt.Sprintf("%d %s that can never work (%s for every kind the policy matches: every request would be an error that failurePolicy decides)", k, plural(k, "expression", "expressions"), plural(k, "it fails type checking", "they fail type checking")))
	}
	msg := "--policies: the policies cannot be replayed: " + strings.Join(parts, "; ")
	if len(refused) > n[cel.CategoryInput] {
		msg += " (vapc check reports the same)"
	}
	return msg
}

// flagSet defines the flags of vapc replay into f.
func (f *replayFlags) flagSet(stdout, stderr io.Writer) *flagSet {
	fs := newFlagSet("replay", stdout, stderr, help{
		usage: "vapc replay --policies FILE|DIR [flags] AUDIT.LOG[.gz]|DIR|- ...",
		about: `Replays kube-apiserver audit logs (audit.k8s.io/v1 events, one JSON object a line, as
--audit-log-path writes them: plain, gzip-compressed, or - for standard input, which is
copied to a file in $TMPDIR first, and streamed with --policies-throughout) through the
policies, and tells for every request they match what kube-apiserver ` + verify.KubernetesVersion + ` would have decided
and whether that differs from what the log records. Several logs are read as one, in the time
order of their events (rotated files, the logs of several kube-apiservers, an export's files of
a day, a folder's files at any depth), each opened as the replay reaches its first event.

The replay keeps the objects the policies read (params, namespaces, old objects) by following
the log's writes, from --snapshot on (vapc snapshot takes one: take it when the log begins).
Every decision is certain (every state the server could have been in decides alike), likely
(decided on the state the log's order gives, where a lag of kube-apiserver's informers or watch
cache would give another outcome: the record lists the alternatives and what each needs) or
indeterminate (the log does not hold what the decision needs: the reason says what), never
guessed. The policies
are checked first, as vapc check does: replay refuses those kube-apiserver would not create, and
warns of an expression that fails type checking for every kind its policy matches (the server
creates such a policy and evaluates it).

The verdict is computed once, and the exit code, the text summary (its first lines), JUnit, the
last line of --output jsonl and --report state it: it fails on damaged input (a compressed log
cut short or unreadable, no audit event, more malformed lines than --max-malformed, a last line
cut short among them) and, when asked,
on the predictions (--check-recorded, --fail-on; a likely decision counts as its decision,
or with --strict as indeterminate). Without --fail-on, denials are reported, not failed. While it reads, a progress line goes to standard error (every ` + progressEvery.String() + ` when it is
not a terminal; --quiet for none).`,
		outcomes: []outcome{
			{exitOK, "the logs were read whole and the gate holds (without --fail-on, requests the policies would deny are reported, not failed)"},
			{exitFindings, "the gate fails: damaged input, a disagreement with the log (--check-recorded), a request --fail-on names; or policies kube-apiserver would not create, or no policy to replay"},
			{exitInterrupted, "interrupted (Ctrl-C, SIGTERM): the requests read are decided and every output is written, marked partial"},
		},
		examples: []example{
			{"what would the policies have decided on the traffic of the log? (the summary on stdout)", "vapc replay --policies policies/ --snapshot cluster.yaml audit.log audit-2025-01-06.log.gz"},
			{"the same as an HTML page: timelines of the nodes and decisions, every request not admitted", "vapc replay --policies policies/ --snapshot cluster.yaml --report replay.html audit.log"},
			{"in CI: fail when a request would be denied, with a JUnit report", "vapc replay --policies policies/ --fail-on deny --output junit audit.log > vapc-replay.xml"},
		},
	})
	fs.Var(&f.policies, "policies", "file or folder of the ValidatingAdmissionPolicies, MutatingAdmissionPolicies and their bindings to replay (repeatable)")
	fs.meta("policies", "FILE|DIR")
	fs.Var(&f.snapshots, "snapshot", "file or folder of cluster objects (vapc snapshot, or kubectl get -o yaml|json) the log starts from (repeatable)")
	fs.meta("snapshot", "FILE|DIR")
	fs.Var(&f.crds, "crd", "CustomResourceDefinition file or folder for custom kinds the snapshot and the log do not define (repeatable)")
	fs.meta("crd", "FILE|DIR")
	outputFlag(fs, &f.output, replayOutputs)
	fs.Var(&f.failOn, "fail-on", "exit 1 when a request would be denied (deny), warned or denied (warn), decided otherwise than recorded or a recorded verdict not reproduced (any-change), or not decided (indeterminate); several separated by commas, or repeated")
	fs.choices("fail-on", "deny", "warn", "any-change", "indeterminate")
	fs.meta("fail-on", "deny|warn|any-change|indeterminate")
	fs.DurationVar(&f.lag, "informer-lag", replay.DefaultLag, "how long after a write completed kube-apiserver's informers and watch cache may not hold it yet: a request received sooner that the version before the write decides otherwise is decided as likely, one received later as certain")
	fs.meta("informer-lag", "DURATION")
	fs.BoolVar(&f.strict, "strict", false, "count a likely decision (one that rests on kube-apiserver's informers or watch cache being current) as indeterminate, not as its decision")
	fs.BoolVar(&f.throughout, "policies-throughout", false, "decide every request with the given policies, also where the log shows one not installed (before the log creates it, after it deletes it or its binding): what they would have decided over the whole log, not what the server decided; standard input (or a pipe) is then streamed, decided as it comes (tail -f audit.log | vapc replay --policies-throughout ... -), not copied to a file first")
	fs.BoolVar(&f.checkRecorded, "check-recorded", false, "compare the log's own verdicts with the predictions and exit 1 on any disagreement; the replayed policies are taken to be the cluster's, so the verdicts of every one the log shows installed also say which state a request was decided in (without it, only those of a policy the log shows created word for word do)")
	fs.BoolVar(&f.gkeDryRuns, "gke-labels-dry-runs", false, "the cluster's GKE labels its dry runs' Cloud Logging entries (command.gke.io/dryRun), as GKE has since 2026: an entry without the label was no dry run, where the export holds no labelled entry to show it (without the flag, a write of such an export may have been a dry run, which stores nothing, unless its response or body shows it was not)")
	fs.IntVar(&f.maxLine, "max-line-bytes", replay.DefaultMaxLineBytes, "longest log line read; longer lines are reported as malformed")
	fs.meta("max-line-bytes", "BYTES")
	fs.IntVar(&f.maxMalformed, "max-malformed", 0, "malformed lines tolerated before the replay fails (a compressed log cut short or unreadable always fails it; a line the replay cannot read may have been a write, whose object is then not known)")
	fs.meta("max-malformed", "N")
	fs.StringVar(&f.report, "report", "", "also write an HTML report of the replay (its verdict, node, eviction and decision timelines, the requests not admitted) to this file")
	fs.meta("report", "FILE.html")
	fs.StringVar(&f.enablePlugins, "enable-admission-plugins", "", "built-in admission plugins the cluster enables beyond kube-apiserver's defaults, comma-separated as kube-apiserver takes them")
	fs.meta("enable-admission-plugins", "A,B")
	fs.StringVar(&f.disablePlugins, "disable-admission-plugins", "", "built-in admission plugins the cluster disables of kube-apiserver's defaults, comma-separated")
	fs.meta("disable-admission-plugins", "A,B")
	fs.StringVar(&f.inputFormat, "input-format", "auto", "how the audit logs are wrapped, detected per file by default: "+strings.Join(replay.InputFormats(), ", ")+
		" (the log backend's lines, the webhook backend's EventLists, EKS's CloudWatch Logs, AKS's diagnostic settings, GKE's Cloud Logging; detected only: the log backend's events pretty-printed or in arrays as jq writes them, kube-apiserver's container log file, and the AWS CLI's text output of log events: see the README, Where your audit log is)")
	fs.choices("input-format", replay.InputFormats()...)
	fs.Var(&f.reportRedact, "report-redact", "GROUP/RESOURCE (RESOURCE for the core group) whose values the report replaces by their sizes, as it does for secrets (repeatable)")
	fs.meta("report-redact", "GROUP/RESOURCE")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress line on standard error")
	fs.DurationVar(&f.progressEvery, "progress-interval", progressEvery, "how often a progress line is written when standard error is not a terminal, as in a CI log (0: never)")
	fs.meta("progress-interval", "DURATION")
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
