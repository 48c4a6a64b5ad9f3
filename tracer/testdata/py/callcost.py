"""callcost.py N: the time per call of N MPI_Barrier on MPI_COMM_SELF from
a Python loop two functions deep, printed as "ns/call X". Run it traced and
untraced, alternated: the difference is the tracer's cost per call of an
mpi4py program (tracer/python_test.go, BenchmarkPythonCall).
"""
import sys
import time

from mpi4py import MPI

comm = MPI.COMM_SELF


def inner(k):
    for _ in range(k):
        comm.Barrier()


def outer(k):
    inner(k)


n = int(sys.argv[1])
outer(min(n, 10000))  # warm-up: the call site is known
t = time.perf_counter_ns()
outer(n)
print("ns/call %.1f" % ((time.perf_counter_ns() - t) / n))
