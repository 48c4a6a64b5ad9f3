# pyexc: rank 1 raises an exception that nothing catches; the report names
# it and its traceback. An exception caught before (@caught) is not
# reported. Run with `python -m mpi4py pyexc.py`, which calls MPI_Abort
# at the uncaught exception: json.loads raises
# json.decoder.JSONDecodeError inside Python's library, called from @parse
# and @call, below mpi4py's and runpy's frames. With the argument "late",
# rank 1 raises a ValueError whose message is 1000 characters of 2 bytes
# each after MPI.Finalize() (@late, called from @call-late).
import json
import sys

from mpi4py import MPI


def parse(text):
    return json.loads(text)  # @parse


def late():
    raise ValueError("\u00e9" * 1000)  # @late


comm = MPI.COMM_WORLD
rank = comm.Get_rank()
try:
    1 / 0
except ZeroDivisionError:
    pass  # @caught
comm.Barrier()
if sys.argv[1:] == ["late"]:
    MPI.Finalize()
    if rank == 1:
        late()  # @call-late
else:
    if rank == 1:
        parse("{")  # @call
    comm.Barrier()
