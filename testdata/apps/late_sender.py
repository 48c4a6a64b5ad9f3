"""late_sender.py: a late sender in mpi4py, for dtpa's end-to-end tests.

Rank 0 sleeps 200 ms, then sends a pickled object to rank 1 (mpi4py
receives it with MPI_Mprobe + MPI_Mrecv); rank 1 waits from the start:
Real Sync on rank 1 is 0.2 s. Then a barrier and an allreduce. The
exchange is interval 1, marked with dtmarks.py's pcontrol (MPI_Pcontrol
through ctypes). The "# @name" markers are
the lines the SRC points' stacks must name (e2e/mpi4py_test.go).

    dtrun -np 4 python3 late_sender.py && dtpa python3
"""
import time

from mpi4py import MPI
from dtmarks import pcontrol


comm = MPI.COMM_WORLD
rank = comm.Get_rank()
comm.Barrier()  # @barrier-before
pcontrol(100, 1)
if rank == 0:
    time.sleep(0.2)
    comm.send({"payload": list(range(8))}, dest=1, tag=7)  # @send
elif rank == 1:
    comm.recv(source=0, tag=7)  # @recv
comm.Barrier()  # @barrier-after
pcontrol(101, 1)
total = comm.allreduce(rank)  # @allreduce
if rank == 0:
    print("late_sender.py: sum of ranks", total)
