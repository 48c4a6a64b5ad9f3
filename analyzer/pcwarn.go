package analyzer

import (
	"fmt"
	"path/filepath"
	"strings"
)

// pcontrolWarnings remembers which of a replay's warnings a misplaced
// MPI_Pcontrol caused, and the call's site, so that the report can say
// where in the source the bad call is (placePcontrolWarnings), which only
// the symbolizer can tell once the replay is over.
type pcontrolWarnings struct {
	sites map[string]uint32 // warning → call site (file-local)
}

// note records the warnings rp gave from index from on as caused by the
// MPI_Pcontrol call at site.
func (p *pcontrolWarnings) note(rp *replayer, from int, site uint32) {
	for _, w := range rp.warns[min(from, len(rp.warns)):] {
		if p.sites == nil {
			p.sites = map[string]uint32{}
		}
		p.sites[w] = site
	}
}

// placePcontrolWarnings adds the source position of the MPI_Pcontrol call
// to each warning it caused: "Rank 2: solver.c:62: MPI_Pcontrol(101, 1)
// leaves …". The position is the innermost frame with a file; warnings
// whose call has none are left as they are.
func placePcontrolWarnings(warns []string, ranks []*rankResult, sym Symbolizer) []string {
	if sym == nil {
		return warns
	}
	pos := map[string]string{}
	for _, rr := range ranks {
		if rr == nil || rr.defs == nil || len(rr.pcw) == 0 {
			continue
		}
		keys := rr.siteKeyer()
		for w, site := range rr.pcw {
			ref := keys.ref(site)
		frames:
			for i := range ref.modules {
				for _, fr := range sym.Symbolize(ref.modules[i], ref.offsets[i]) {
					if fr.File != "" {
						pos[w] = fmt.Sprintf("%s:%d", filepath.Base(fr.File), fr.Line)
						break frames
					}
				}
			}
		}
	}
	if len(pos) == 0 {
		return warns
	}
	out := make([]string, len(warns))
	for i, w := range warns {
		out[i] = w
		p, ok := pos[w]
		if !ok {
			continue
		}
		if who, rest, found := strings.Cut(w, ": "); found {
			out[i] = who + ": " + p + ": " + rest
		} else {
			out[i] = p + ": " + w
		}
	}
	return out
}
