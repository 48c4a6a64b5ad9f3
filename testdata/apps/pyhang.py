# pyhang: rank 1 raises an exception that nothing catches between two
# barriers; the interpreter ends it, whose exit calls MPI_Finalize, while
# the other ranks wait in the second barrier (@wait) for it forever. The
# job hangs until it is interrupted. The report names the exception and
# its traceback (@raise, @call) as rank 1's crash.
from mpi4py import MPI


def work(x):
    return 1 / x  # @raise


comm = MPI.COMM_WORLD
comm.Barrier()
if comm.Get_rank() == 1:
    print("pyhang: waiting", flush=True)
    work(0)  # @call
comm.Barrier()  # @wait
