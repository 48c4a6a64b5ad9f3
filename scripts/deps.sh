#!/usr/bin/env bash
# Installs what building and testing dtpa needs, only when it is missing:
# OpenMPI, MPICH, gfortran, protoc, protobuf-c, npm, libotf2, otf2-tools and libunwind (Debian packages;
# package otf2 builds with cgo against libotf2, its tests run otf2-print) and
# the Go modules. libunwind-dev (its runtime, libunwind8, with it) is what the
# tracer links to unwind call stacks; traced programs need libunwind8 too.
# With --test also the third-party MPI programs the end-to-end tests trace
# (hpcc, LAMMPS, NWChem, Quantum ESPRESSO, ABINIT, OpenFOAM with its
# tutorials, GROMACS, ExaML; R's Rmpi; FEniCSx, Meep), the libraries their own programs call MPI
# through (parallel HDF5 and ScaLAPACK for both MPIs; PETSc, Boost.MPI,
# FFTW's MPI interface, mpi4py-fft and PnetCDF, built with Open MPI),
# OpenCoarrays (Coarray Fortran on Open MPI, with its own test programs),
# Slurm with munge (e2e TestSrun starts a one-node cluster of its own,
# TestNodes a two-node one), iproute2 and util-linux (TestNodes emulates
# two nodes with Linux namespaces joined by a virtual Ethernet pair) and
# Debian's chromium, in which the HTML report is tested
# headless.
# Idempotent; needs root (or sudo) only when something is missing.
set -euo pipefail

need=()
command -v mpicc.openmpi  >/dev/null || need+=(openmpi-bin libopenmpi-dev)
command -v mpirun.openmpi >/dev/null || need+=(openmpi-bin)
command -v mpicc.mpich    >/dev/null || need+=(mpich libmpich-dev)
command -v mpiexec.mpich  >/dev/null || need+=(mpich)
command -v gfortran       >/dev/null || need+=(gfortran)
command -v protoc         >/dev/null || need+=(protobuf-compiler)
command -v protoc-c       >/dev/null || need+=(protobuf-c-compiler)
[ -f /usr/include/protobuf-c/protobuf-c.h ] || need+=(libprotobuf-c-dev)
command -v npm            >/dev/null || need+=(npm)
command -v pkg-config     >/dev/null || need+=(pkg-config)
[ -f /usr/include/otf2/otf2.h ]       || need+=(libopen-trace-format2-dev)
command -v otf2-print     >/dev/null || need+=(otf2-tools)
[ -f /usr/include/x86_64-linux-gnu/libunwind.h ] || [ -f /usr/include/libunwind.h ] || need+=(libunwind-dev)
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || need+=(python3-mpi4py)
# CPython 3.11's headers: tracer/python_test.go checks the tracer's copy of
# its frame layout (tracer/rt/dt_py311.h) against them.
[ -f /usr/include/python3.11/internal/pycore_frame.h ] || need+=(python3.11-dev)
if [ "${1:-}" = "--test" ]; then
  command -v hpcc >/dev/null || need+=(hpcc)
  command -v lmp  >/dev/null || need+=(lammps)
  command -v caf.openmpi >/dev/null || need+=(libcoarrays-openmpi-dev)
  command -v slurmd >/dev/null || need+=(slurmd slurmctld slurm-client munge)
  command -v ip >/dev/null || need+=(iproute2)
  command -v nsenter >/dev/null || need+=(util-linux)
  command -v pgrep >/dev/null || need+=(procps)
  command -v nwchem.openmpi >/dev/null || need+=(nwchem-openmpi)
  command -v pw.x >/dev/null || need+=(quantum-espresso)
  [ -f /usr/share/espresso/pseudo/Si.pz-vbc.UPF ] || need+=(quantum-espresso-data)
  command -v abinit >/dev/null || need+=(abinit)
  [ -d /usr/lib/R/site-library/Rmpi ] || need+=(r-cran-rmpi)
  /usr/bin/python3 -c 'import dolfinx' 2>/dev/null || need+=(python3-dolfinx-real)
  [ -f /usr/share/abinit/psp/14-Si.nlcc.UPF ] || need+=(abinit-data)
  command -v chromium >/dev/null || need+=(chromium)
  pkg-config --exists PETSc 2>/dev/null || need+=(petsc-dev)
  [ -f /usr/lib/x86_64-linux-gnu/libboost_mpi.so ] || need+=(libboost-mpi-dev)
  command -v icoFoam >/dev/null || need+=(openfoam)
  command -v gmx_mpi >/dev/null || need+=(gromacs)
  command -v parse-examl >/dev/null || need+=(examl)
  /usr/bin/python3 -c 'import meep' 2>/dev/null || need+=(python3-meep-openmpi python3-matplotlib)
  [ -d /usr/share/doc/openfoam-examples/examples ] || need+=(openfoam-examples)
  [ -f /usr/include/fftw3-mpi.h ] || need+=(libfftw3-mpi-dev)
  [ -f /usr/include/pnetcdf.h ] || need+=(libpnetcdf-dev)
  /usr/bin/python3 -c 'import mpi4py_fft' 2>/dev/null || need+=(python3-mpi4py-fft)
  for m in openmpi mpich; do
    [ -f /usr/include/hdf5/$m/hdf5.h ] || need+=(libhdf5-$m-dev)
    [ -f /usr/lib/x86_64-linux-gnu/libscalapack-$m.so ] || need+=(libscalapack-$m-dev)
  done
fi

if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deps: installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
go mod download
