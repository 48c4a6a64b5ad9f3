# pyctypeshang: ranks 0 and 2 wait in MPI_Barrier called through ctypes
# (@wait, in wait_all, from @call) while rank 1 sleeps; the job hangs
# until it is interrupted. The report places the ranks' calls in progress
# at the script's line below ctypes' C frames (the call site of a call
# from C code below Python), and rank 1 in no MPI call at its line.
import ctypes
import time

from mpi4py import MPI

lib = ctypes.CDLL(None)
comm = MPI.COMM_WORLD
handle_type = ctypes.c_void_p if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_void_p) else ctypes.c_int
handle = handle_type(MPI._handleof(comm))


def wait_all():
    lib.MPI_Barrier(handle)  # @wait


comm.Barrier()
if comm.Get_rank() == 1:
    print("pyctypeshang: waiting", flush=True)
    while True:
        time.sleep(1)  # @sleep
wait_all()  # @call
