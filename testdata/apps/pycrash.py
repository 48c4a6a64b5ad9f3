# pycrash: rank 1 crashes inside a C extension (ctypes reads through a
# null pointer) two functions deep. The report shows the extension's C
# frames, then the script's lines that called it (@boom, @step, @main).
# With the argument "damaged", step first points its interpreter frame's
# link to its caller at unmapped memory (CPython 3.8 to 3.13): the
# tracer's walk of the Python frames must stop there, unharmed. With
# "thread", a thread that never called MPI crashes (threading's frames
# below step); with "finalized", rank 1 crashes after MPI_Finalize, in a
# file (ctypes') no MPI call was made from.
# The other ranks wait in MPI_Barrier until the launcher ends them.
import ctypes
import sys
import threading

from mpi4py import MPI


def boom():
    ctypes.string_at(0)  # @boom


def step(damaged):
    if damaged:
        if sys.version_info < (3, 11):  # PyFrameObject.f_back
            ctypes.c_void_p.from_address(id(sys._getframe()) + 24).value = 0x100000000000
        else:
            f = ctypes.c_void_p.from_address(id(sys._getframe()) + 24).value  # PyFrameObject.f_frame
            previous = 48 if sys.version_info < (3, 12) else 8  # _PyInterpreterFrame.previous
            ctypes.c_void_p.from_address(f + previous).value = 0x100000000000
    boom()  # @step


comm = MPI.COMM_WORLD
comm.Barrier()
rank, mode = comm.Get_rank(), sys.argv[1:]
if mode == ["finalized"]:
    MPI.Finalize()
    if rank == 1:
        step(False)  # @late
else:
    if rank == 1 and mode == ["thread"]:
        t = threading.Thread(target=step, args=(False,))
        t.start()
        t.join()
    elif rank == 1:
        step(mode == ["damaged"])  # @main
    comm.Barrier()
