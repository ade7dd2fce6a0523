package main

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/vapc-dev/vapc/internal/auditgen"
)

type genAuditFlags struct {
	seed                                     int64
	events                                   int64
	bytes                                    string
	gzip                                     bool
	snapshot, out                            string
	nodes, kosmosNodes, namespaces, podsNode int
	start                                    string
	duration                                 time.Duration
	omitStages                               string
}

func runGenAudit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f genAuditFlags
	fs := newFlagSet("gen-audit",
		"usage: vapc-bench gen-audit --events N|--bytes SIZE [--seed N] [--gzip] [--snapshot FILE] [-o FILE]", stderr)
	fs.Int64Var(&f.seed, "seed", 1, "random seed: the same flags write the same bytes")
	fs.Int64Var(&f.events, "events", 0, "number of events (lines) to write")
	fs.StringVar(&f.bytes, "bytes", "", "size to write instead of --events, e.g. 500MB or 2GB (events average about 2 KB)")
	fs.BoolVar(&f.gzip, "gzip", false, "gzip-compress the log")
	fs.StringVar(&f.snapshot, "snapshot", "", "also write the initial cluster (namespaces, nodes, pods) as a kubectl get -o yaml List to this file")
	fs.StringVar(&f.out, "o", "-", "output file (- for stdout)")
	fs.IntVar(&f.nodes, "nodes", 0, "nodes (default 400)")
	fs.IntVar(&f.kosmosNodes, "kosmos-nodes", 0, "Kosmos leaf nodes among them (default nodes/20)")
	fs.IntVar(&f.namespaces, "namespaces", 0, "team namespaces (default 60)")
	fs.IntVar(&f.podsNode, "pods-per-node", 0, "pods per node (default 12)")
	fs.StringVar(&f.start, "start", "", "time of the first request, RFC 3339 (default 2026-11-21T00:00:00Z)")
	fs.DurationVar(&f.duration, "duration", 0, "log time the requests are spread over (default 24h)")
	fs.StringVar(&f.omitStages, "omit-stages", "RequestReceived", "comma-separated stages not written, as an audit policy's omitStages (\"\" writes every stage)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("gen-audit: unexpected arguments %q", pos)
	}
	cfg := auditgen.Config{
		Seed: f.seed, Events: f.events, Nodes: f.nodes, KosmosNodes: f.kosmosNodes, Namespaces: f.namespaces,
		PodsPerNode: f.podsNode, Duration: f.duration, OmitStages: []auditv1.Stage{},
	}
	if f.bytes != "" {
		if cfg.Bytes, err = parseSize(f.bytes); err != nil {
			return usagef("gen-audit: --bytes: %v", err)
		}
	}
	if cfg.Events < 0 || cfg.Bytes < 0 || (cfg.Events == 0 && cfg.Bytes == 0) {
		fs.Usage()
		return usagef("gen-audit: give a positive --events or --bytes")
	}
	if f.nodes < 0 || f.kosmosNodes < 0 || f.namespaces < 0 || f.podsNode < 0 || f.duration < 0 {
		return usagef("gen-audit: sizes and --duration must not be negative")
	}
	if f.start != "" {
		if cfg.Start, err = time.Parse(time.RFC3339, f.start); err != nil {
			return usagef("gen-audit: --start: %v", err)
		}
	}
	for _, s := range strings.Split(f.omitStages, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		switch st := auditv1.Stage(s); st {
		case auditv1.StageRequestReceived, auditv1.StageResponseStarted, auditv1.StageResponseComplete, auditv1.StagePanic:
			cfg.OmitStages = append(cfg.OmitStages, st)
		default:
			return usagef("gen-audit: --omit-stages: unknown stage %q", s)
		}
	}

	var out io.Writer = stdout
	var file *os.File
	if f.out != "-" {
		if file, err = os.Create(f.out); err != nil {
			return fmt.Errorf("gen-audit: %w", err)
		}
		defer file.Close()
		out = file
	}
	var zw *gzip.Writer
	if f.gzip {
		zw, _ = gzip.NewWriterLevel(out, gzip.BestSpeed)
		out = zw
	}
	var snap *os.File
	if f.snapshot != "" {
		if snap, err = os.Create(f.snapshot); err != nil {
			return fmt.Errorf("gen-audit: %w", err)
		}
		defer snap.Close()
		cfg.SnapshotWriter = snap
	}
	began := time.Now()
	st, err := auditgen.Generate(out, cfg)
	if err != nil {
		return fmt.Errorf("gen-audit: %w", err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return fmt.Errorf("gen-audit: %w", err)
		}
	}
	for _, c := range []*os.File{file, snap} {
		if c != nil {
			if err := c.Close(); err != nil {
				return fmt.Errorf("gen-audit: %w", err)
			}
		}
	}
	secs := max(time.Since(began).Seconds(), 1e-9)
	fmt.Fprintf(stderr, "gen-audit: %d events, %.1f MB, %d requests (%s to %s); %d pods created, %d deleted; %d snapshot objects; %.1fs, %.0f events/s, %.1f MB/s\n",
		st.Events, float64(st.Bytes)/1e6, st.Requests, st.First.Format(time.RFC3339), st.Last.Format(time.RFC3339),
		st.PodsCreated, st.PodsDeleted, st.SnapshotObjects, secs, float64(st.Events)/secs, float64(st.Bytes)/1e6/secs)
	return nil
}

// parseSize parses a byte count with an optional K, M or G suffix (powers of 1000, B optional).
func parseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B")
	mult := int64(1)
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1e3, strings.TrimSuffix(t, "K")
	case strings.HasSuffix(t, "M"):
		mult, t = 1e6, strings.TrimSuffix(t, "M")
	case strings.HasSuffix(t, "G"):
		mult, t = 1e9, strings.TrimSuffix(t, "G")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("not a size: %q", s)
	}
	return int64(v * float64(mult)), nil
}
