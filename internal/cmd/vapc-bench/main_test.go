package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenAudit drives both commands through run: their logs, flags and exit codes.
func TestGenAudit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, gz, snap := filepath.Join(dir, "a.log"), filepath.Join(dir, "a.log.gz"), filepath.Join(dir, "snap.yaml")
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		wantStderr string
	}{
		{"plain", []string{"gen-audit", "--seed", "3", "--events", "500", "--snapshot", snap, "-o", out}, exitOK, "gen-audit: 500 events"},
		{"gzip", []string{"gen-audit", "--seed", "3", "--events", "500", "--gzip", "-o", gz}, exitOK, "gen-audit: 500 events"},
		{"bytes", []string{"gen-audit", "--bytes", "200KB", "-o", filepath.Join(dir, "b.log")}, exitOK, "gen-audit:"},
		{"no size", []string{"gen-audit", "-o", filepath.Join(dir, "c.log")}, exitUsage, "give a positive --events or --bytes"},
		{"bad size", []string{"gen-audit", "--bytes", "lots"}, exitUsage, "not a size"},
		{"bad stage", []string{"gen-audit", "--events", "5", "--omit-stages", "Never"}, exitUsage, "unknown stage"},
		{"extra args", []string{"gen-audit", "--events", "5", "x"}, exitUsage, "unexpected arguments"},
		{"floor", []string{"decode-floor", out}, exitOK, ""},
		{"floor gzip", []string{"decode-floor", gz}, exitOK, ""},
		{"floor missing", []string{"decode-floor", filepath.Join(dir, "missing")}, exitUsage, "no such file"},
		{"floor no args", []string{"decode-floor"}, exitUsage, "no audit logs"},
		{"help", []string{"gen-audit", "-h"}, exitOK, "usage: vapc-bench gen-audit"},
		{"bad flag", []string{"gen-audit", "--nope"}, exitUsage, "flag provided but not defined"},
		{"no command", []string{}, exitUsage, "no command given"},
		{"unknown command", []string{"replay"}, exitUsage, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			if got := exitCode(err); got != tc.code {
				t.Fatalf("run(%q) exit code = %d (%v), want %d; stderr:\n%s", tc.args, got, err, tc.code, stderr.String())
			}
			msg := stderr.String()
			if err != nil {
				msg += err.Error()
			}
			if !strings.Contains(msg, tc.wantStderr) {
				t.Errorf("run(%q) stderr and error = %q, want %q in them", tc.args, msg, tc.wantStderr)
			}
			if len(tc.args) > 0 && tc.args[0] == "decode-floor" && tc.code == exitOK && !strings.Contains(stdout.String(), "decode-floor: 500 events") {
				t.Errorf("run(%q) stdout = %q, want 500 events", tc.args, stdout.String())
			}
		})
	}
	plain, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(gz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plain, unzipped) {
		t.Errorf("--gzip wrote another log than without it")
	}
	if s, err := os.ReadFile(snap); err != nil || !bytes.HasPrefix(s, []byte("apiVersion: v1\nitems:\n")) {
		t.Errorf("snapshot %s: %v, starts %q", snap, err, s[:min(len(s), 40)])
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"2GB", 2e9, false}, {"500M", 5e8, false}, {"1.5k", 1500, false}, {"123", 123, false},
		{"", 0, true}, {"-1G", 0, true}, {"GB", 0, true},
	} {
		got, err := parseSize(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("parseSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
