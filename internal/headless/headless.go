// Package headless opens a page in Debian's chromium without a display, as
// the tests of the HTML report do: the DOM after the page's scripts ran,
// the browser's console log, every network request it made (from its net
// log), and a screenshot.
package headless

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dtpa/dtpa/internal/testenv"
)

// Page is what the browser made of one page.
type Page struct {
	DOM     string // serialized after the scripts ran (--dump-dom)
	Console string // the browser's log (stderr), console messages included
	// Requests are the URLs the page requested other than file:// ones
	// (from the browser's net log; see pageRequests).
	Requests []string
}

// flags keep chromium from doing anything on its own: no sync, no update
// checks, no field trials, no GPU, no sandbox (tests run as root).
var flags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-default-apps", "--disable-extensions", "--enable-logging=stderr", "--v=0"}

// Open loads file (a path) in chromium and returns the DOM, console log and
// requests. It calls testenv.Missing when chromium is not installed.
func Open(t testing.TB, file string) Page {
	t.Helper()
	testenv.NeedCommands(t, "chromium")
	dir := t.TempDir()
	netlog := filepath.Join(dir, "netlog.json")
	out, stderr := run(t, dir, "--log-net-log="+netlog, "--net-log-capture-mode=Default", "--dump-dom", fileURL(t, file))
	p := Page{DOM: out, Console: stderr}
	nl, err := os.ReadFile(netlog)
	if err != nil {
		t.Fatalf("chromium wrote no net log: %v\n%s", err, stderr)
	}
	p.Requests, err = pageRequests(nl)
	if err != nil {
		t.Fatalf("reading chromium's net log: %v", err)
	}
	return p
}

// OpenURL loads u (a page served over http, e.g. by dtpa view) in
// chromium, giving its scripts up to budget of virtual time (time that
// stands still while requests are in flight) before the DOM is taken, and
// returns the DOM, console log and every request made, the page's own
// load included.
func OpenURL(t testing.TB, u string, budget time.Duration) Page {
	t.Helper()
	testenv.NeedCommands(t, "chromium")
	dir := t.TempDir()
	netlog := filepath.Join(dir, "netlog.json")
	out, stderr := run(t, dir, "--log-net-log="+netlog, "--net-log-capture-mode=Default",
		"--virtual-time-budget="+strconv.Itoa(int(budget.Milliseconds())), "--dump-dom", u)
	p := Page{DOM: out, Console: stderr}
	nl, err := os.ReadFile(netlog)
	if err != nil {
		t.Fatalf("chromium wrote no net log: %v\n%s", err, stderr)
	}
	p.Requests, err = pageRequests(nl)
	if err != nil {
		t.Fatalf("reading chromium's net log: %v", err)
	}
	return p
}

// pageRequests lists the URLs of the requests a page made, from a net log:
// the jobs started with an initiator. Chromium's own requests (update
// checks, network time, accounts), which it makes whatever the flags, have
// none ("not an origin"); those of a page opened from file:// have its
// opaque origin ("null"). Loads of file:// URLs are left out.
func pageRequests(netlog []byte) ([]string, error) {
	var nl struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int `json:"type"`
			Params struct {
				URL       string `json:"url"`
				Initiator string `json:"initiator"`
			} `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(netlog, &nl); err != nil {
		// A browser that exits at once may leave the event list open.
		if err2 := json.Unmarshal(append(bytes.TrimRight(bytes.TrimSpace(netlog), ","), "]}"...), &nl); err2 != nil {
			return nil, err
		}
	}
	start, ok := nl.Constants.LogEventTypes["URL_REQUEST_START_JOB"]
	if !ok {
		return nil, fmt.Errorf("no URL_REQUEST_START_JOB event type")
	}
	var out []string
	for _, e := range nl.Events {
		if e.Type != start || e.Params.URL == "" || strings.HasPrefix(e.Params.URL, "file:") || e.Params.Initiator == "not an origin" {
			continue
		}
		out = append(out, e.Params.URL)
	}
	return out, nil
}

// Screenshot loads file in a window of w×h CSS pixels and returns the
// picture.
func Screenshot(t testing.TB, file string, w, h int) image.Image {
	t.Helper()
	testenv.NeedCommands(t, "chromium")
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	_, stderr := run(t, dir, "--hide-scrollbars", "--window-size="+strconv.Itoa(w)+","+strconv.Itoa(h), "--screenshot="+shot, fileURL(t, file))
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, stderr)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}
	return img
}

// Colours counts the distinct colours of img.
func Colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

// ConsoleErrors are the lines of a console log that report a script error,
// a refused load (the page's Content-Security-Policy) or a failed request.
func ConsoleErrors(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Uncaught") || strings.Contains(l, "Refused to") ||
			strings.Contains(l, "net::ERR") || strings.Contains(l, "SyntaxError") || strings.Contains(l, "TypeError") {
			out = append(out, l)
		}
	}
	return out
}

// CheckReport fails t unless p, a page of dtpa's HTML report, ran its
// scripts to the end (they mark the page data-rendered="1"), logged no
// error and requested nothing but the file.
func CheckReport(t testing.TB, p Page) {
	t.Helper()
	if !strings.Contains(p.DOM, `data-rendered="1"`) {
		t.Errorf("the page's script did not finish; console:\n%s", p.Console)
	}
	if errs := ConsoleErrors(p.Console); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	if len(p.Requests) > 0 {
		t.Errorf("network requests: %q", p.Requests)
	}
}

// CheckPage is CheckReport for a page served from origin (a URL ending
// in "/"): every request it made went there.
func CheckPage(t testing.TB, p Page, origin string) {
	t.Helper()
	if !strings.Contains(p.DOM, `data-rendered="1"`) {
		t.Errorf("the page's script did not finish; console:\n%s", p.Console)
	}
	if errs := ConsoleErrors(p.Console); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	for _, r := range p.Requests {
		if !strings.HasPrefix(r, origin) {
			t.Errorf("request to %s, not to %s", r, origin)
		}
	}
}

func run(t testing.TB, dir string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := append(append([]string{}, flags...), "--user-data-dir="+filepath.Join(dir, "profile"))
	a = append(a, args...)
	cmd := exec.CommandContext(ctx, "chromium", a...)
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("chromium timed out after 2 minutes\n%s", e.String())
	}
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, e.String())
	}
	return o.String(), e.String()
}

func fileURL(t testing.TB, file string) string {
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	return (&url.URL{Scheme: "file", Path: abs}).String()
}
