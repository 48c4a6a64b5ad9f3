//go:build view

package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dtpa/dtpa/analyzer"
)

// lockedBuffer is a bytes.Buffer that Main writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The server's tests run in the build that has it, dtpa-view (make test
// runs them with -tags view); view_usage_test.go has the command line's.

// TestView: dtpa view analyses the late-sender run, prints the address
// it serves on (127.0.0.1), serves the page and its windows, and exits 0
// once its context ends (as on Ctrl-C).
func TestView(t *testing.T) {
	dir := lateSender(t)
	var out, errOut lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int)
	go func() {
		code <- Main(ctx, []string{"dtpa", "view", "--dir", dir, "app"}, &out, &errOut, analyzer.Analyze)
	}()
	re := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`)
	var url string
	for i := 0; url == "" && i < 600; i++ {
		select {
		case c := <-code:
			t.Fatalf("dtpa view exited %d: %s %s", c, out.String(), errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
		url = re.FindString(out.String())
	}
	if url == "" {
		t.Fatalf("no address printed: %q", out.String())
	}
	for _, p := range []string{"", "api/window?from=0&to=300000000&px=100"} {
		resp, err := http.Get(url + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || (p == "" && !strings.Contains(string(b), `id="dtpa-live"`)) ||
			(p != "" && !strings.Contains(string(b), `"detail":true`)) {
			t.Errorf("GET /%s: %d %.200q", p, resp.StatusCode, b)
		}
	}
	cancel()
	if c := <-code; c != exitOK || !strings.Contains(out.String(), "dtpa: stopped") {
		t.Errorf("exit %d, stdout %q, stderr %q", c, out.String(), errOut.String())
	}
}

// TestViewPortInUse: a port in use is exit 1 and says so.
func TestViewPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if _, errOut, c := dtpa(t, "view", "--port", port, "--dir", t.TempDir(), "app"); c != exitError || !strings.Contains(errOut, "address already in use") {
		t.Errorf("port in use: exit %d, stderr %q", c, errOut)
	}
}
