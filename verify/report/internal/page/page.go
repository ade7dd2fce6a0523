// Package page writes the report's HTML page: one self-contained file, the styles, the script
// and the data inline, that a browser opens without the network (its Content-Security-Policy
// allows no request at all). The script draws the charts in SVG by hand and reads the data
// only through textContent and SVG attributes, never as markup: a log's strings are data.
package page

import (
	_ "embed"
	"html"
	"io"
)

var (
	//go:embed page.css
	css string
	//go:embed page.js
	js string
)

// CSP is the page's Content-Security-Policy: inline styles and scripts, images from data:
// URLs, nothing else.
const CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

// Write writes the page: title is its title, data the JSON the script renders (encoded with
// encoding/json's HTML escaping, so that it cannot end the script element).
func Write(w io.Writer, title string, data []byte) error {
	parts := []string{
		"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
		"<meta http-equiv=\"Content-Security-Policy\" content=\"" + CSP + "\">\n",
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
		"<meta name=\"generator\" content=\"vapc\">\n",
		"<title>" + html.EscapeString(title) + "</title>\n",
		"<link rel=\"icon\" href=\"data:,\">\n",
		"<style>\n", css, "</style>\n</head>\n<body>\n",
		"<noscript>This report is drawn by its inline script: allow JavaScript for this file.</noscript>\n",
		"<div id=\"app\"></div>\n",
		"<script type=\"application/json\" id=\"report-data\">",
	}
	for _, p := range parts {
		if _, err := io.WriteString(w, p); err != nil {
			return err
		}
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	for _, p := range []string{"</script>\n<script>\n", js, "</script>\n</body>\n</html>\n"} {
		if _, err := io.WriteString(w, p); err != nil {
			return err
		}
	}
	return nil
}
