package headless

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeesRequests: the harness notices a page that fetches something, and
// a script error in the console.
func TestSeesRequests(t *testing.T) {
	page := filepath.Join(t.TempDir(), "fetch.html")
	const body = `<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png"><script>undefinedFunction()</script></body></html>`
	if err := os.WriteFile(page, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Open(t, page)
	if len(p.Requests) != 1 || !strings.HasPrefix(p.Requests[0], "http://127.0.0.1:9/") {
		t.Errorf("requests %q, want the image", p.Requests)
	}
	if len(ConsoleErrors(p.Console)) == 0 {
		t.Errorf("no script error found in the console log:\n%s", p.Console)
	}
}
