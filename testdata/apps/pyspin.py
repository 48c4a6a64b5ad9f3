# pyspin: after a barrier (@last) rank 1 computes forever in spin (@spin)
# and rank 2 sleeps (@sleep), while rank 0 waits in comm.recv (@wait) for
# a message that never comes. The job hangs until it is interrupted; the
# report says where each rank in no MPI call was then.
import time

from mpi4py import MPI


def spin():
    x = 0
    while True: x += 1  # @spin (one line: wherever the signal finds the loop)


comm = MPI.COMM_WORLD
rank = comm.Get_rank()
comm.Barrier()  # @last
if rank == 1:
    spin()
if rank == 2:
    time.sleep(100)  # @sleep
if rank == 0:
    print("pyspin: waiting", flush=True)
comm.recv(source=1)  # @wait
