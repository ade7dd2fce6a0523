package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/vapc-dev/vapc/internal/auditgen"
)

func runDecodeFloor(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("decode-floor",
		"usage: vapc-bench decode-floor AUDIT.LOG[.gz]|- ...\n\nReads each log with bufio and decodes every line with encoding/json into the audit Event fields,\nrequestObject and responseObject as json.RawMessage, on one goroutine.", stderr)
	logs, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		fs.Usage()
		return usagef("decode-floor: no audit logs given")
	}
	for _, l := range logs {
		if _, err := os.Stat(l); err != nil && l != "-" {
			return usagef("decode-floor: %v", err)
		}
	}
	began := time.Now()
	var total auditgen.FloorStats
	for _, l := range logs {
		var r io.Reader = stdin
		if l != "-" {
			file, err := os.Open(l)
			if err != nil {
				return fmt.Errorf("decode-floor: %w", err)
			}
			defer file.Close()
			r = file
		}
		st, err := auditgen.DecodeFloor(r)
		total.Lines += st.Lines
		total.Bytes += st.Bytes
		total.Malformed += st.Malformed
		if err != nil {
			return fmt.Errorf("decode-floor: %s: %w", l, err)
		}
	}
	secs := max(time.Since(began).Seconds(), 1e-9)
	fmt.Fprintf(stdout, "decode-floor: %d events, %.1f MB, %d malformed lines in %.2fs: %.0f events/s, %.1f MB/s\n",
		total.Lines, float64(total.Bytes)/1e6, total.Malformed, secs, float64(total.Lines)/secs, float64(total.Bytes)/1e6/secs)
	return nil
}
