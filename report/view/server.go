// Package view serves a run's report page from a local web server (dtpa
// view) for runs too big for one self-contained page: the page
// (report/html) starts from an overview of every rank aggregated to a
// thousand bins and asks the server for each window the user zooms or
// pans to; the server answers with every call, message and interval
// execution of the window when there are few enough (detail), else with
// the window aggregated to the screen's pixels (per rank and pixel: time
// per kind of call and time lost).
//
// Memory stays bounded whatever the run's size: during the analysis the
// calls are spooled in time order to a temporary file (Store), and only a
// sparse time index and a histogram per rank stay in memory; a request
// reads the chunks of its window alone.
//
// The server listens on 127.0.0.1 only, answers GET / (the page) and GET
// /api/window, and nothing else: no files, no listing; requests naming
// another host (DNS rebinding) are refused.
package view

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/dtpa/dtpa/analyzer"
	"github.com/dtpa/dtpa/report"
	"github.com/dtpa/dtpa/report/html"
)

// Server answers the page and its window requests.
type Server struct {
	st   *Store
	page []byte
}

// New prepares the server of rep once the analysis with rec (whose Sink
// was st) returned.
func New(st *Store, rep *report.Report, rec *analyzer.TimelineRecorder) (*Server, error) {
	tl := rec.Timeline()
	if tl == nil {
		return nil, errors.New("view: no timeline recorded")
	}
	if err := st.finish(rec, tl); err != nil {
		return nil, err
	}
	// The page starts from the recorder's overview of the whole run; the
	// detail comes from the server.
	meta := *tl
	meta.Lanes = make([]report.Lane, len(tl.Lanes))
	for i, ln := range tl.Lanes {
		ln.Start, ln.Dur, ln.Lost, ln.Func, ln.Site, ln.Bytes, ln.Peer, ln.Coll = []int64{}, []int64{}, []int64{}, []int{}, []int{}, []int64{}, []int{}, []int{}
		ln.Ties, ln.Thread = nil, nil // Threads stays: the page lays out the sub-lanes once
		ln.Spans = report.Spans{Start: []int64{}, Dur: []int64{}, Interval: []int{}, Level: []int{}}
		ln.Truncated, ln.DetailEnd = true, 0
		meta.Lanes[i] = ln
	}
	meta.Messages = report.Messages{From: []int{}, To: []int{}, Send: []int64{}, Recv: []int64{}}
	meta.Truncated = true
	meta.Intervals = st.intervals
	var b bytes.Buffer
	if err := html.WriteServed(&b, rep, &meta, "/api/window"); err != nil {
		return nil, err
	}
	return &Server{st: st, page: b.Bytes()}, nil
}

// ServeHTTP answers GET / and GET /api/window; anything else is 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	if !loopbackHost(r.Host) {
		http.Error(w, "this server answers requests to 127.0.0.1 or localhost only", http.StatusMisdirectedRequest)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/":
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(s.page)))
		w.Write(s.page)
	case "/api/window":
		s.window(w, r)
	default:
		http.NotFound(w, r)
	}
}

// loopbackHost: the Host header names this machine's loopback, so that a
// page of another site whose name was pointed at 127.0.0.1 cannot read
// the answers.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// maxPixels bounds the resolution a window request may ask for.
const maxPixels = 8192

func (s *Server) window(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, err1 := strconv.ParseInt(q.Get("from"), 10, 64)
	to, err2 := strconv.ParseInt(q.Get("to"), 10, 64)
	px, err3 := strconv.Atoi(q.Get("px"))
	if err1 != nil || err2 != nil || err3 != nil || to <= from || px < 1 {
		http.Error(w, "want from, to (ns, from < to) and px (> 0)", http.StatusBadRequest)
		return
	}
	px = min(px, maxPixels)
	win, err := s.st.Window(from, to, px)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(win)
}

// Serve serves on ln until ctx is done, then shuts down (requests in
// flight get up to 2 s to finish).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close() // requests still running after 2 s are cut
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Listen listens on 127.0.0.1:port (0: a free port chosen by the system).
func Listen(port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	return ln, nil
}

// Analyze runs analyze (analyzer.Analyze or a stand-in) on opts with a
// store as the timeline's sink, spooling to tempDir ("" the system's),
// and returns the server of the result; close the store when done.
func Analyze(ctx context.Context, opts analyzer.Options, tempDir string,
	analyze func(context.Context, analyzer.Options) (*report.Report, error)) (*Server, *Store, error) {
	st, err := NewStore(tempDir)
	if err != nil {
		return nil, nil, err
	}
	// The page's own detail is the server's: the recorder keeps one call
	// per rank, its overview and numbering.
	rec := &analyzer.TimelineRecorder{MaxCalls: 1, Sink: st}
	opts.Timeline = rec
	rep, err := analyze(ctx, opts)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	srv, err := New(st, rep, rec)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return srv, st, nil
}
