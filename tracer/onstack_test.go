package tracer_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSignalHandlersOnAltStack: under dtrun, the handlers a program
// installs for SIGPROF (sigaction without SA_ONSTACK) and SIGCHLD (signal)
// get SA_ONSTACK from the preload stub, so that on the tracer's Go threads,
// which keep both signals unblocked, they run on the alternate signal stack
// and not on a goroutine's; they still run (a profiling timer at 50 µs of
// CPU, a child's end) and the results are the program's. The same program
// run by the launcher alone reads back its handler as it installed it.
func TestSignalHandlersOnAltStack(t *testing.T) {
	const want = "prof_onstack=1 chld_onstack=1 chld_handler=1 sum=79600\n"
	for _, m := range stackMPIs {
		t.Run(m.name, func(t *testing.T) {
			prog := build(t, "onstack", m.cc)
			res := dtrun(t, t.TempDir(), nil, append(m.launch[:len(m.launch):len(m.launch)], prog)...)
			if res.code != 0 || strings.Count(res.out, want) != 4 {
				t.Fatalf("dtrun: exit %d, want 4 ranks printing %q:\n%s", res.code, want, res.out)
			}
			launcher := "mpirun.openmpi"
			if m.name == "MPICH" {
				launcher = "mpirun.mpich"
			}
			plain := run(t, t.TempDir(), nil, launcher, append(m.launch[:len(m.launch):len(m.launch)], prog)...)
			if plain.code != 0 || strings.Count(plain.out, "prof_onstack=0 chld_onstack=0 chld_handler=1 sum=79600\n") != 4 {
				t.Fatalf("%s alone: exit %d:\n%s", filepath.Base(launcher), plain.code, plain.out)
			}
		})
	}
}
