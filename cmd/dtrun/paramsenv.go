package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dtpa/dtpa/tracer/params"
)

// paramsEnv is what the ranks' environment needs for the tracer's writer
// (tracer/rt/dt_cw.c), as NAME=value: the tracer's parameters as dtrun
// finds them (package params: tracer.par in its working directory, then
// the environment), encoded as the trace header's TracerParams in hex
// (DT_PARAMS), which every node's ranks take as they are instead of
// reading them again (their encoder's Go runtime would start in MPI_Init
// to read them).
func paramsEnv(getenv func(string) string, warn io.Writer) []string {
	if getenv("DT_CWRITER") != "" {
		fmt.Fprintln(warn, "dtrun: DT_CWRITER is ignored: the tracer has one writer")
	}
	wd, _ := os.Getwd()
	p, err := params.Load(wd, getenv)
	if err != nil {
		fmt.Fprintf(warn, "dtrun: %v; the tracer uses the defaults\n", err)
		p = params.Defaults()
	}
	m, err := p.Encoded()
	if err != nil {
		return nil
	}
	return []string{"DT_PARAMS=" + hex.EncodeToString(m)}
}

// forwardedEnv is the tracer's other variables in dtrun's environment
// (env: NAME=value), DT_CLOCK, DT_DISABLE, DT_CLOCK_SKEW and the rest, as
// NAME=value for the launcher to give every rank: a rank on dtrun's node
// inherits them from the launcher, one on another node gets only what
// the launcher passes on (Open MPI's mpirun passes what -x names). Those
// dtrun sets itself are left out.
func forwardedEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "DT_") && !ownEnv[k] {
			out = append(out, kv)
		}
	}
	return out
}

// ownEnv are the variables dtrun sets for the ranks (DT_SPILL_DIR,
// DT_PARAMS) or reads only itself.
var ownEnv = map[string]bool{"DT_SPILL_DIR": true, "DT_PARAMS": true, "DT_MPIRUN": true, "DT_SPILL_ROOT": true, "DT_CWRITER": true}
