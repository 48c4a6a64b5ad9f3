"""pfft.py: a distributed 3-D FFT with mpi4py-fft, for dtpa's end-to-end tests.

mpi4py-fft redistributes its arrays with MPI_Alltoallw, one subarray
datatype (MPI_Type_create_subarray) per peer, over the subcommunicators
of its process grid. The N x N x N complex array is split in pencils over
a 2 x 2 grid at 4 ranks: a forward transform makes two redistributions,
each an MPI_Alltoallw among the 2 ranks of a row or a column of the grid
in which every rank sends its whole pencil (N^3 / 4 complex numbers of 16
bytes, its own share included) and receives as much; the backward
transform makes two more. Interval 1 is the forward transform, interval
2 the backward one (MPI_Pcontrol through ctypes: dtmarks.py).

The forward result must be numpy's FFT of the whole array at every
point a rank holds, the backward one the input; rank 0 then prints
"pfft: ok" (exit 1 otherwise).

    dtrun -np 4 python3 pfft.py && dtpa python3
"""
import sys

import numpy as np
from mpi4py import MPI
from mpi4py_fft import PFFT, newDistArray
from dtmarks import pcontrol

N = 16


comm = MPI.COMM_WORLD
rng = np.random.default_rng(42)
whole = rng.random((N, N, N)) + 1j * rng.random((N, N, N))
fft = PFFT(comm, (N, N, N), dtype=np.complex128, grid=(2, 2) if comm.Get_size() == 4 else None)
u = newDistArray(fft, False)
u[:] = whole[u.local_slice()]

pcontrol(100, 1)
u_hat = fft.forward(u, newDistArray(fft, True), normalize=False)
pcontrol(101, 1)
ok = np.allclose(u_hat, np.fft.fftn(whole)[u_hat.local_slice()], rtol=1e-12, atol=1e-9)

pcontrol(100, 2)
back = fft.backward(u_hat, newDistArray(fft, False), normalize=True)
pcontrol(101, 2)
ok = ok and np.allclose(back, whole[back.local_slice()], rtol=1e-12, atol=1e-12)

ok = comm.allreduce(ok, op=MPI.LAND)
fft.destroy()
if comm.Get_rank() == 0:
    print("pfft: ok" if ok else "pfft: WRONG")
sys.exit(0 if ok else 1)
