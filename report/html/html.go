// Package html writes a report as one self-contained HTML page (dtpa
// --html): the report and its timeline are embedded as JSON, and the
// page's script (page.js) draws the findings (report.FindingsOf), per
// interval the charts and tables and the profile views (functions,
// communication matrices, message sizes, node traffic, call mix and
// grain per processor), the interval tree and the timeline. The
// communication matrices are embedded apart, summed into blocks past
// MaxMatrixCells processors (matrix.go).
// Nothing is fetched: the page opens from file:// offline, and its
// Content-Security-Policy forbids any network request and any script but
// the page's own (by hash), so that even a name from a trace that slipped
// into markup could not run. The same page served by dtpa view
// (WriteServed) may also ask its own server for windows of the timeline.
//
// The bar charts are drawn by Chart.js, an npm package pinned in
// web/package-lock.json: `make build` installs it with npm ci and copies
// its single-file build into vendor/, which is embedded here (and not
// committed). Chart.js because it is small for what it does (one file,
// no dependencies at run time, ~200 KB), draws stacked horizontal and
// vertical bars with tooltips and legends as they are, needs neither
// eval nor fetched resources (so it runs under the page's policy), and is
// well kept (regular releases, MIT). The timeline stays the page's own
// canvas code: it draws up to hundreds of thousands of boxes with arrows
// between lanes and an overview past the detail, which no chart library's
// data model (a point or a bar per datum, redrawn in full) draws at
// interactive speed.
package html

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dtpa/dtpa/report"
)

//go:embed page.js
var pageJS string

//go:embed page.css
var pageCSS string

// vendor holds the chart library once make build copied it there; the
// directory's README keeps the embed valid before.
//
//go:embed vendor
var vendor embed.FS

// chartFile is the library's file in vendor (web/ builds it).
const chartFile = "vendor/chart.umd.min.js"

// ErrNoChartLibrary: the binary was built without running make build.
var ErrNoChartLibrary = errors.New("report/html: the chart library is not built in: run make build (npm ci in web/ copies Chart.js into report/html/vendor)")

// ChartJS is the embedded chart library's script.
func ChartJS() (string, error) {
	b, err := vendor.ReadFile(chartFile)
	if err != nil || len(b) == 0 {
		return "", ErrNoChartLibrary
	}
	return string(b), nil
}

//go:generate go run gen_chartsum.go

// chartScriptHash is the policy's source expression of the script chart, the
// chart library: the generated chartHash when chart has the size of the
// library it was generated from, else its hash computed here. Hashing the
// library (200 KB) cost as much as the report of a small run; the file is
// fixed by the version web/package-lock.json pins, and TestChartHash fails
// until go generate follows a change of it.
func chartScriptHash(chart string) string {
	if len(chart) == chartSize {
		return chartHash
	}
	return hash(chart)
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// Write writes the page of r, with the timeline tl (nil: none recorded).
func Write(w io.Writer, r *report.Report, tl *report.Timeline) error {
	return write(w, r, marshalled(tl), "")
}

// WriteStream is Write with the timeline's JSON written into the page by
// tl as the page is written (nil: none recorded), so that the timeline
// need not be whole in memory (report.WriteTimelineJSON). It writes what
// Write writes with the timeline tl encodes.
func WriteStream(w io.Writer, r *report.Report, tl func(io.Writer) error) error {
	if tl == nil {
		return write(w, r, marshalled(nil), "")
	}
	return write(w, r, tl, "")
}

// marshalled writes tl's JSON.
func marshalled(tl *report.Timeline) func(io.Writer) error {
	return func(w io.Writer) error {
		tj, err := json.Marshal(tl) // "null" when nil
		if err != nil {
			return fmt.Errorf("encoding timeline: %w", err)
		}
		_, err = w.Write(tj)
		return err
	}
}

// WriteServed writes the page of r as dtpa view serves it: tl holds the
// overview, and the page asks windowURL (a path on its own server) for
// the detail of each window shown (report/view).
func WriteServed(w io.Writer, r *report.Report, tl *report.Timeline, windowURL string) error {
	if windowURL == "" {
		return errors.New("report/html: no window URL")
	}
	return write(w, r, marshalled(tl), windowURL)
}

func write(w io.Writer, r *report.Report, tl func(io.Writer) error, windowURL string) error {
	chart, err := ChartJS()
	if err != nil {
		return err
	}
	data, matrices := pageData(r)
	rj, err := report.AppendJSON(nil, data) // json.Marshal's bytes
	if err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	mj, err := json.Marshal(matrices)
	if err != nil {
		return fmt.Errorf("encoding matrices: %w", err)
	}
	lj, err := json.Marshal(map[string]string{"window": windowURL})
	if err != nil {
		return err
	}
	// The calls in progress when the processes ended, grouped as the text
	// report groups them, with the calls of each line (to find them in
	// the timeline).
	uj, err := json.Marshal(report.UnfinishedGroups(r.Unfinished))
	if err != nil {
		return err
	}
	// Where the ranks in no call in progress were, in the text report's
	// lines.
	ej, err := json.Marshal(append([]string{}, report.ElsewhereLines(r.Elsewhere)...))
	if err != nil {
		return err
	}
	// Where the crashed processes crashed, in the text report's lines.
	crashes := [][]string{}
	for i := range r.Crashes {
		crashes = append(crashes, r.Crashes[i].Lines())
	}
	cj, err := json.Marshal(crashes)
	if err != nil {
		return err
	}
	csp := "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src " + chartScriptHash(chart) + " " + hash(pageJS)
	if windowURL != "" {
		csp += "; connect-src 'self'"
	}
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
<section id="summary"><h2>Findings</h2><p id="verdict"></p><ol class="losses" id="losses"></ol></section>
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
	}{{"dtpa-report", rj}, {"dtpa-timeline", nil}, {"dtpa-matrices", mj}, {"dtpa-live", lj}, {"dtpa-unfinished", uj}, {"dtpa-elsewhere", ej}, {"dtpa-crashes", cj}} {
		if _, err := fmt.Fprintf(w, "<script type=\"application/json\" id=\"%s\">", d.id); err != nil {
			return err
		}
		if d.data == nil {
			err = tl(w)
		} else {
			_, err = w.Write(d.data)
		}
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, "</script>\n"); err != nil {
			return err
		}
	}
	// The library's file holds no "</script" (chartFile is checked by
	// TestChartLibrary).
	_, err = io.WriteString(w, "<script>"+chart+"</script>\n<script>"+pageJS+"</script>\n</body>\n</html>\n")
	return err
}
