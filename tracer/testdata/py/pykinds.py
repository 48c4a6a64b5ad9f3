"""pykinds.py: MPI_Barrier from each kind of Python frame, for the tracer's
Python call-stack tests (tracer/python_test.go, TestPythonFrameKinds, which
runs it under a file name that is not ASCII): a generator, a coroutine,
code compiled from a string, a lambda, a call under sys.settrace and one
30 calls deep. Lines are found by their markers.
"""
import asyncio
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD


def gen():
    for i in range(2):
        comm.Barrier()  # @gen
        yield i


async def coro():
    await asyncio.sleep(0)
    comm.Barrier()  # @coro


def deep(n):
    if n == 0:
        comm.Barrier()  # @deep
    else:
        deep(n - 1)  # @deep-call


def trace(frame, event, arg):
    return trace


list(gen())  # @gen-call
asyncio.run(coro())
exec(compile("comm.Barrier()\n", "<dyn>", "exec"))  # @exec
f = lambda: comm.Barrier()  # @lambda
f()  # @lambda-call
sys.settrace(trace)
comm.Barrier()  # @settrace
sys.settrace(None)
deep(30)  # @deep-top
