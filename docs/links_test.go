// Package docs holds the repository's Markdown documentation; its test
// checks that every reference in the Markdown files (README.md, docs/,
// tracer/README.md, …) can be followed by someone who has only the
// repository: relative links name files that exist inside it, anchors name
// headings that exist, and file names mentioned in the text (`x.md`) exist.
package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// notInRepo are Markdown files that the text may name although the
// repository does not hold them (none: users see only this repository).
var notInRepo = map[string]bool{}

var (
	// [text](target) and [text](target "title"); images likewise.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// A Markdown file named in the text: README.md, docs/user-guide.md.
	mdName     = regexp.MustCompile(`(?:^|[\s(` + "`" + `'"])((?:\.\.?/)*[A-Za-z0-9_][A-Za-z0-9_./-]*\.md)\b`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	hasScheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	linkInText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// repoRoot is the directory above this package's.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return root
}

// markdownFiles lists the repository's Markdown files, leaving out hidden
// directories and build outputs.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel != "." && strings.HasPrefix(d.Name(), "."),
				rel == "bin", rel == "lib", rel == filepath.Join("tracer", "build"):
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// line is one line of prose: fenced code blocks are left out, and code
// spans are kept only for file-name mentions (a link inside a code span is
// not a link).
type line struct {
	n          int
	text       string // code spans removed
	withSpans  string
	isHeading  bool
	headingTxt string
}

func proseLines(src string) []line {
	var out []line
	fence := ""
	for i, l := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		pl := line{n: i + 1, text: codeSpan.ReplaceAllString(l, ""), withSpans: l}
		if m := heading.FindStringSubmatch(l); m != nil {
			pl.isHeading, pl.headingTxt = true, m[1]
		}
		out = append(out, pl)
	}
	return out
}

// slug is the anchor GitHub gives a heading: lower case, punctuation other
// than '-' and '_' dropped, spaces as '-'.
func slug(h string) string {
	h = linkInText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the heading anchors of a Markdown file, with GitHub's -1, -2
// suffixes for repeated headings.
func anchors(src string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(src) {
		if !l.isHeading {
			continue
		}
		s := slug(l.headingTxt)
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestLinksResolve: every relative link and every anchor in the
// repository's Markdown resolves inside the repository.
func TestLinksResolve(t *testing.T) {
	root := repoRoot(t)
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		cache[path] = anchors(string(b))
		return cache[path], nil
	}
	files := markdownFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no Markdown files found")
	}
	links := 0
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range proseLines(string(b)) {
			var targets []string
			for _, m := range inlineLink.FindAllStringSubmatch(l.text, -1) {
				targets = append(targets, m[1])
			}
			if m := refLink.FindStringSubmatch(l.text); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if hasScheme.MatchString(target) {
					continue // a web address; not checked offline
				}
				links++
				if msg := checkLink(root, file, target, anchorsOf); msg != "" {
					t.Errorf("%s:%d: link %q: %s", rel, l.n, target, msg)
				}
			}
		}
	}
	if links == 0 {
		t.Fatal("no relative links found; the link pattern is broken")
	}
}

// checkLink resolves target as GitHub does for a file in the repository
// and returns what is wrong with it, or "".
func checkLink(root, file, target string, anchorsOf func(string) (map[string]bool, error)) string {
	path, anchor, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		if strings.HasPrefix(path, "/") {
			dest = filepath.Join(root, filepath.FromSlash(path))
		} else {
			dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		}
		if r, err := filepath.Rel(root, dest); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return "points outside the repository"
		}
		if _, err := os.Stat(dest); err != nil {
			return "no such file in the repository"
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	a, err := anchorsOf(dest)
	if err != nil {
		return err.Error()
	}
	if !a[strings.ToLower(anchor)] {
		return fmt.Sprintf("no heading with anchor #%s", anchor)
	}
	return ""
}

// TestMarkdownNamesResolve: a Markdown file named in the text (`see
// docs/user-guide.md`) exists, relative to the naming file or to the
// repository root.
func TestMarkdownNamesResolve(t *testing.T) {
	root := repoRoot(t)
	for _, file := range markdownFiles(t, root) {
		rel, _ := filepath.Rel(root, file)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range proseLines(string(b)) {
			for _, m := range mdName.FindAllStringSubmatch(l.withSpans, -1) {
				name := m[1]
				if notInRepo[name] {
					continue
				}
				found := false
				for _, dir := range []string{filepath.Dir(file), root} {
					p := filepath.Join(dir, filepath.FromSlash(name))
					if r, err := filepath.Rel(root, p); err != nil || strings.HasPrefix(r, "..") {
						continue
					}
					if _, err := os.Stat(p); err == nil {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("%s:%d: %s is not in the repository", rel, l.n, name)
				}
			}
		}
	}
}

// TestNoCheckoutPaths: no Markdown file shows where this checkout is
// (sample output pasted from a run names files relative to the repository).
func TestNoCheckoutPaths(t *testing.T) {
	root := repoRoot(t)
	for _, file := range markdownFiles(t, root) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, root+"/") {
				rel, _ := filepath.Rel(root, file)
				t.Errorf("%s:%d: names this checkout's path %s", rel, i+1, root)
			}
		}
	}
}

// TestSlug pins the anchor rule against headings as GitHub renders them.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Event batches":                   "event-batches",
		"What `make demo` shows":          "what-make-demo-shows",
		"7. Reading the report (§7)":      "7-reading-the-report-7",
		"Two commands on a fresh machine": "two-commands-on-a-fresh-machine",
		"MPI_Pcontrol — intervals":        "mpi_pcontrol--intervals",
		"[Link](x.md) text":               "link-text",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}
