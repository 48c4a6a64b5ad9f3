# pycrash: rank 1 crashes inside a C extension (ctypes reads through a
# null pointer) after its last MPI call, MPI_Comm_rank (@last): none of the
# crash's frames is the script's, so dtpa names that call and its line.
# The other ranks wait in MPI_Barrier until the launcher ends them.
import ctypes

from mpi4py import MPI

comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 1:  # @last
    ctypes.string_at(0)
comm.Barrier()
