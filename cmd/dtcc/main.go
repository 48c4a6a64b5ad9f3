// Command dtcc compiles and links an MPI program with the dtpa tracer built
// in, so that a plain `mpirun ./app` writes <app>.<rank>.trc (the original
// system's dtcc/dtf77/dtf90). Installed as dtcc (C), dtcxx (C++) and dtf90
// (Fortran): one program that wraps mpicc, mpicxx or mpif90 by its name.
//
//	dtcc -O2 -g -o app app.c && mpirun -np 4 ./app && dtpa app
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := Main(os.Args, os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "dtcc:", err)
		os.Exit(2)
	}
}
