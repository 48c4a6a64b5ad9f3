package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/dtpa/dtpa/traceformat/tracepb"
	"github.com/dtpa/dtpa/tracer/params"
	"google.golang.org/protobuf/proto"
)

// cwriterEnv is what the ranks' environment needs for the tracer's writer
// (tracer/golib/dt_cw.c), as NAME=value: DT_CWRITER itself, so that every
// node's ranks load the same library (the C writer's unless DT_CWRITER=0
// asks for the Go writer), and for the C writer the tracer's parameters as
// dtrun finds them (package params: tracer.par in its working directory,
// then the environment), encoded as the trace header's TracerParams in hex
// (DT_PARAMS): the C writer reads neither the file nor the variables
// itself.
func cwriterEnv(getenv func(string) string, warn io.Writer) []string {
	if getenv("DT_CWRITER") == "0" {
		return []string{"DT_CWRITER=0"}
	}
	wd, _ := os.Getwd()
	p, err := params.Load(wd, getenv)
	if err != nil {
		fmt.Fprintf(warn, "dtrun: %v; the tracer uses the defaults\n", err)
		p = params.Defaults()
	}
	m, err := proto.Marshal(&tracepb.TracerParams{UserStackSize: uint32(p.UserStackSize), MaxTraceSizeMb: p.MaxTraceSize,
		TraceBufSize: p.TraceBufSize, Other: p.Other})
	if err != nil {
		return []string{"DT_CWRITER=1"}
	}
	return []string{"DT_CWRITER=1", "DT_PARAMS=" + hex.EncodeToString(m)}
}
