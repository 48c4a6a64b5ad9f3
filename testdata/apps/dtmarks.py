"""dtmarks.py: dtpa's interval marks for the Python test programs.

mpi4py's MPI.Pcontrol accepts levels 0…2 only, so pcontrol calls the C
function MPI_Pcontrol(level, n) through ctypes: 100 enters interval n, 101
leaves it. The traced process exports it; in an untraced one it may be
missing, and then the marks do nothing. The e2e tests copy this file next
to the script they run.
"""
import ctypes


def pcontrol(level, n):
    """MPI_Pcontrol(level, n): dtpa's interval marks (100 enter, 101 leave)."""
    try:
        ctypes.CDLL(None).MPI_Pcontrol(level, n)
    except AttributeError:
        pass
