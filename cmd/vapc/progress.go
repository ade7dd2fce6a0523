package main

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/vapc-dev/vapc/verify/replay"
)

// progressEvery is how often a replay writes a progress line to a standard error that is not
// a terminal (a CI log): often enough to show it is alive, seldom enough not to flood the log.
// On a terminal the line is rewritten every second.
const progressEvery = 5 * time.Second

// progress writes a replay's progress to standard error: on a terminal one line rewritten in
// place, elsewhere (CI) a line every interval, none for a replay shorter than that.
type progress struct {
	w        io.Writer
	terminal bool
	every    time.Duration
	// total is the size of the inputs as stored, 0 when one is standard input; read counts
	// the bytes read of them (replay.Source.Read).
	total int64
	read  atomic.Int64
	last  time.Duration
}

// newProgress returns the progress of a replay of the logs (paths, "-" for standard input),
// or nil with --quiet.
func newProgress(stderr io.Writer, logs []string, every time.Duration, quiet bool) *progress {
	if quiet {
		return nil
	}
	p := &progress{w: stderr, terminal: isTerminal(stderr), every: every}
	if p.terminal {
		p.every = time.Second
	}
	if p.every <= 0 {
		return nil
	}
	for _, l := range logs {
		info, err := os.Stat(l)
		if l == "-" || err != nil || !info.Mode().IsRegular() {
			p.total = 0
			break
		}
		p.total += info.Size()
	}
	return p
}

// option is the replay's option that calls the progress.
func (p *progress) option() replay.Option { return replay.WithProgress(p.every, p.report) }

// report writes the progress of the replay. The replay calls it every interval and once at
// its end: in a CI log the last call writes a line only when an interval has passed since the
// one before.
func (p *progress) report(r replay.Progress) {
	if !p.terminal && r.Elapsed-p.last < p.every {
		return
	}
	p.last = r.Elapsed
	secs := max(r.Elapsed.Seconds(), 1e-9)
	mb := float64(r.Bytes) / (1 << 20)
	took := r.Elapsed.Round(time.Second)
	if r.Elapsed < 10*time.Second {
		took = r.Elapsed.Round(100 * time.Millisecond)
	}
	line := fmt.Sprintf("%d lines (%.1f MB) in %s, %.1f MB/s", r.Lines, mb, took, mb/secs)
	if p.total > 0 {
		line += fmt.Sprintf(", %d%% of the input read", min(100, p.read.Load()*100/p.total))
	}
	if p.terminal {
		fmt.Fprintf(p.w, "\r%s   ", line)
		return
	}
	fmt.Fprintf(p.w, "vapc replay: %s\n", line)
}

// done ends the progress: on a terminal, the line it rewrote.
func (p *progress) done() {
	if p != nil && p.terminal {
		fmt.Fprintln(p.w)
	}
}

// isTerminal says whether w is a terminal (progress is rewritten in place only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
