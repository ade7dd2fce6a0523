package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/vapc-dev/vapc/verify/report/internal/page"
)

// WriteHTML writes the report: one HTML file that holds its data, styles and script, and
// opens in a browser without the network.
func WriteHTML(w io.Writer, d *Data) error {
	data, err := json.Marshal(d) // escapes <, > and &: the data cannot end its script element
	if err != nil {
		return err
	}
	var names []string
	for _, f := range d.Inputs.Logs {
		names = append(names, filepath.Base(f))
	}
	title := "vapc replay"
	switch {
	case len(names) > 3: // a folder of an export's objects, many of one name (PT1H.json)
		title += fmt.Sprintf(": %s and %d more logs", names[0], len(names)-1)
	case len(names) > 0:
		title += ": " + strings.Join(names, ", ")
	}
	return page.Write(w, title, data)
}

// WriteFile writes the report to path, replacing it only once it is whole.
func WriteFile(path string, d *Data) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := WriteHTML(bw, d); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	return nil
}
