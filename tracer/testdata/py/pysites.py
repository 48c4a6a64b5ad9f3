"""pysites.py: MPI calls at known lines, for the tracer's Python call-stack
tests (tracer/python_test.go).

helper's MPI_Barrier is called from two places (once from first, three
times from second): two call sites, each with its whole Python stack. A
thread of its own (MPI_THREAD_MULTIPLE) calls MPI_Barrier on a duplicate
of the world while the main thread waits in MPI_Recv. MPI_Init_thread is
called at the import (the import machinery's frames are left out). Lines
are found by their markers.
"""
import threading

from mpi4py import MPI  # @import


def helper(comm):
    comm.Barrier()  # @helper


def first(comm):
    helper(comm)  # @first


def second(comm):
    for _ in range(3):
        helper(comm)  # @second


def worker(comm):
    comm.Barrier()  # @worker
    comm.Send(b"done", dest=comm.Get_rank(), tag=7)  # @worker-send


comm = MPI.COMM_WORLD
first(comm)  # @main-first
second(comm)  # @main-second
dup = comm.Dup()
t = threading.Thread(target=worker, args=(dup,))
t.start()
buf = bytearray(4)
dup.Recv(buf, source=dup.Get_rank(), tag=7)  # @main-recv
t.join()
dup.Free()
