package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"

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
