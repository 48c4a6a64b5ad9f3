// Package html writes a report as one self-contained HTML page (dtpa
// --html): the report and its timeline are embedded as JSON, and the
// page's own script (page.js, no library) draws the summary of the biggest
// losses, per interval the charts and tables, the interval tree and the
// timeline. Nothing is fetched: the page opens from file:// offline, and
// its Content-Security-Policy forbids any network request and any script
// but the page's own (by hash), so that even a name from a trace that
// slipped into markup could not run.
//
// The script is written here rather than taken from a chart library: the
// page needs a canvas timeline (hundreds of thousands of boxes: a DOM or
// SVG per box would not pan smoothly), a few stacked bars and sortable
// tables, about 500 lines in all; a library would add a build step fetching
// packages and more code than the page itself.
package html

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dtpa/dtpa/report"
)

//go:embed page.js
var pageJS string

//go:embed page.css
var pageCSS string

// Write writes the page of r, with the timeline tl (nil: none recorded).
func Write(w io.Writer, r *report.Report, tl *report.Timeline) error {
	rj, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	tj, err := json.Marshal(tl) // "null" when nil
	if err != nil {
		return fmt.Errorf("encoding timeline: %w", err)
	}
	sum := sha256.Sum256([]byte(pageJS))
	csp := "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-" +
		base64.StdEncoding.EncodeToString(sum[:]) + "'"
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	fmt.Fprintf(&b, "<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n", csp)
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width\">\n<title>dtpa report</title>\n<style>\n")
	b.WriteString(pageCSS)
	b.WriteString("</style>\n</head>\n<body>\n")
	b.WriteString(`<header><h1 id="title">dtpa report</h1><div class="meta" id="meta"></div></header>
<nav id="tree"></nav>
<main>
<noscript><p>This report is drawn by its script; the data is in the page as JSON.</p></noscript>
<section id="summary"><h2>Biggest losses</h2><ol class="losses" id="losses"></ol></section>
<section id="warnings"></section>
<section id="timeline-section"><h2>Timeline</h2><div id="timeline-info"></div>
<div id="timeline" data-ranks="0" data-messages="0"></div></section>
<div id="intervals"></div>
</main>
`)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	// The JSON goes into script elements as data: encoding/json escapes
	// <, > and & (and U+2028/9), so no string from a trace can close the
	// element or open markup.
	for _, d := range []struct {
		id   string
		data []byte
	}{{"dtpa-report", rj}, {"dtpa-timeline", tj}} {
		if _, err := fmt.Fprintf(w, "<script type=\"application/json\" id=\"%s\">", d.id); err != nil {
			return err
		}
		if _, err := w.Write(d.data); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "</script>\n"); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, "<script>"+pageJS+"</script>\n</body>\n</html>\n")
	return err
}
