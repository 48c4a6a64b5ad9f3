"""objcoll.py: mpi4py's collectives of Python objects, for dtpa's
end-to-end tests (e2e/mpi4py_coll_test.go).

On MPI_COMM_WORLD, a duplicate of it and MPI_COMM_SELF: bcast, gather,
scatter, allgather, alltoall, and reduce, allreduce, scan, exscan (which
mpi4py runs as point-to-point exchanges on a private duplicate of the
communicator). Then on an intercommunicator between the even and the odd
ranks: rooted calls in both directions (MPI.ROOT, MPI.PROC_NULL), object
reduce (point-to-point on a duplicate of the intercommunicator), allreduce,
allgather, alltoall, barrier, and a merge. Every call must be matched.

    dtrun -np 4 python3 objcoll.py && dtpa python3
"""
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
for c in [comm, comm.Dup(), MPI.COMM_SELF]:
    r, n = c.Get_rank(), c.Get_size()
    assert c.bcast({"root": r} if r == 0 else None, root=0) == {"root": 0}
    g = c.gather({"r": r}, root=0)
    assert r != 0 or [x["r"] for x in g] == list(range(n))
    assert c.scatter([{"i": i} for i in range(n)] if r == 0 else None, root=0) == {"i": r}
    assert c.allgather(r) == list(range(n))
    assert c.alltoall([(r, i) for i in range(n)]) == [(i, r) for i in range(n)]
    assert c.allreduce([r], op=MPI.SUM) == list(range(n))
    assert c.reduce(r, op=MPI.MAX, root=0) in (None, n - 1)
    assert c.scan(r) == sum(range(r + 1))
    c.exscan(r)
    c.barrier()

color = rank % 2
local = comm.Split(color, rank)
inter = local.Create_intercomm(0, comm, 1 - color, tag=12)
lr, remote = local.Get_rank(), inter.Get_remote_size()
for root_group in (0, 1):
    if color == root_group:
        root = MPI.ROOT if lr == 0 else MPI.PROC_NULL
    else:
        root = 0
    inter.bcast({"from": root_group}, root=root)
    inter.gather(("g", rank), root=root)
    inter.scatter([("s", i) for i in range(remote)] if root == MPI.ROOT else None, root=root)
    inter.reduce(rank, op=MPI.SUM, root=root)
inter.allreduce(rank)
inter.allgather(rank)
inter.alltoall([rank] * remote)
inter.barrier()
merged = inter.Merge(color == 1)
merged.allreduce(1)
merged.Free()
inter.Free()
local.Free()
comm.Barrier()
if rank == 0:
    print("objcoll.py: done")
