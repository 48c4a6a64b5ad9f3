package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Tool is one face of dtcc: the name it is called by, the MPI compiler
// wrapper it runs, and the environment variable that overrides that.
type Tool struct {
	Name    string // dtcc, dtcxx, dtf90
	Wrapper string // mpicc, mpicxx, mpif90
	Env     string // DT_MPICC, DT_MPICXX, DT_MPIF90
}

// Tools are the faces, by the name dtcc is called as.
var Tools = map[string]Tool{
	"dtcc":  {"dtcc", "mpicc", "DT_MPICC"},
	"dtcxx": {"dtcxx", "mpicxx", "DT_MPICXX"},
	"dtf90": {"dtf90", "mpif90", "DT_MPIF90"},
	"dtf77": {"dtf90", "mpif77", "DT_MPIF77"},
}

const usage = `usage: %[1]s [--mpicc PATH] <the arguments %[2]s takes>

Compiles and links an MPI program with the dtpa tracer built in: run it with
plain mpirun/mpiexec and every rank writes <app>.<rank>.trc (as under dtrun).
Every argument goes to %[2]s untouched; when linking, %[1]s adds the tracer's
stub library (lib/libdtpa_preload.so, found next to this program's bin/) in
front of the MPI libraries, with an rpath to it.

The wrapper: --mpicc PATH, else $%[3]s, else %[2]s. Examples:
  %[1]s -O2 -g -o app app.c && mpirun -np 4 ./app && dtpa app
  DT_MPICC=mpicc.mpich dtcc -g -o app app.c && mpiexec.mpich -n 4 ./app
`

// Main runs the tool named by args[0]; it only returns on an error (the
// wrapper replaces this process).
func Main(args, env []string) error {
	name := filepath.Base(args[0])
	tool, ok := Tools[name]
	if !ok {
		tool = Tools["dtcc"]
	}
	rest := args[1:]
	wrapper := lookupEnv(env, tool.Env)
	if len(rest) >= 2 && (rest[0] == "--mpicc" || rest[0] == "--mpicxx" || rest[0] == "--mpif90") {
		wrapper, rest = rest[1], rest[2:]
	}
	if wrapper == "" {
		wrapper = tool.Wrapper
	}
	if len(rest) == 0 || rest[0] == "--help" || rest[0] == "-help" {
		fmt.Fprintf(os.Stderr, usage, tool.Name, tool.Wrapper, tool.Env)
		if len(rest) == 0 {
			return errors.New("no arguments")
		}
		os.Exit(0)
	}
	libdir := lookupEnv(env, "DT_LIBDIR")
	if libdir == "" {
		var err error
		if libdir, err = defaultLibDir(); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(libdir, "libdtpa_preload.so")); err != nil {
		return fmt.Errorf("tracer library not found in %s (run make build, or set DT_LIBDIR)", libdir)
	}
	path, err := exec.LookPath(wrapper)
	if err != nil {
		return fmt.Errorf("MPI compiler wrapper %q not found (install MPI, or set %s / --mpicc)", wrapper, tool.Env)
	}
	argv := append([]string{wrapper}, Args(rest, libdir)...)
	return syscall.Exec(path, argv, env)
}

// Args returns the wrapper's arguments: args untouched, plus the tracer's
// link flags first when the command links. The stub must come before the
// MPI libraries in the program's list of needed libraries, so that its
// MPI_* trampolines are found first; --no-as-needed keeps the linker from
// dropping the MPI library, whose symbols the stub now also defines (MPICH
// would otherwise be dropped, and MPI_Init not found at run time).
func Args(args []string, libdir string) []string {
	if !links(args) {
		return append([]string(nil), args...)
	}
	out := []string{"-L" + libdir, "-Wl,-rpath," + libdir, "-Wl,--no-as-needed", "-ldtpa_preload"}
	return append(out, args...)
}

// links says whether a compiler command line links (no -c, -S, -E, and not
// only printing dependencies or the version).
func links(args []string) bool {
	for _, a := range args {
		switch a {
		case "-c", "-S", "-E", "-M", "-MM", "--version", "-v", "-showme", "-show", "-showme:compile", "-compile_info":
			return false
		}
	}
	return true
}

// defaultLibDir is lib/ next to the bin/ holding this program.
func defaultLibDir() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(filepath.Dir(exe)), "lib"), nil
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}
