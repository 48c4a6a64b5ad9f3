"""ctypes_site.py: MPI functions called through ctypes, for dtpa's end-to-end tests.

A call a Python program makes through ctypes leaves from libffi's code,
then _ctypes', then the interpreter runs the line that made it: its call
stack is those C frames, then the script's frames. MPI_Barrier and
MPI_Comm_rank are called from one line (@call), so that they have one
call stack: dtpa must still report two SRC points with that stack, 3
MPI_Barrier and 5 MPI_Comm_rank calls on each rank. (Under dtrun the
tracer exports the MPI functions to ctypes.CDLL(None).)

    dtrun -np 2 python3 ctypes_site.py && dtpa python3
"""
import ctypes

from mpi4py import MPI

lib = ctypes.CDLL(None)
comm = MPI.COMM_WORLD
handle_type = ctypes.c_void_p if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_void_p) else ctypes.c_int
handle = handle_type(MPI._handleof(comm))
n = ctypes.c_int(-1)
calls = [(lib.MPI_Barrier, (handle,))] * 3 + [(lib.MPI_Comm_rank, (handle, ctypes.byref(n)))] * 5
for fn, args in calls:
    fn(*args)  # @call
assert n.value == comm.Get_rank(), (n.value, comm.Get_rank())
