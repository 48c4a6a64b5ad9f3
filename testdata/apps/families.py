"""families.py: the MPI API families of dtpa's issue 22 written with
mpi4py, for the end-to-end tests (e2e/family_py_test.go). One family per
run, named by the first argument; 4 ranks.

  requests   every kind of request-creating call, each completed by a wait
             or test: nonblocking file I/O (MPI_File_iwrite_at,
             iread_at, iwrite, iread, iwrite_all, iread_all,
             iwrite_at_all, iread_at_all) waited with
             MPI_Wait, a generalized request (MPI_Grequest_start,
             complete, wait), a cancelled one, MPI_Comm_idup, nonblocking
             collectives, persistent point-to-point (MPI_Send_init,
             MPI_Recv_init, MPI_Startall, three rounds) and request-based
             RMA (MPI_Rput, MPI_Rget, MPI_Raccumulate). mpi4py 3.1 has no
             MPI 4 persistent collectives.
  intercomm  an intercommunicator between the even and the odd ranks:
             point-to-point to remote ranks (blocking and nonblocking),
             rooted collectives in both directions (MPI.ROOT /
             MPI.PROC_NULL), all-to-all collectives (MPI_Allreduce,
             Allgather, Alltoall, Barrier, Iallreduce), MPI_Comm_idup of
             the intercommunicator, a merge.
  threads    MPI_THREAD_MULTIPLE (mpi4py's default): ranks pair up (0–1,
             2–3); thread A of the even rank receives one message from
             its partner, which rank 1 sends after sleeping 0.2 s; thread
             B sends ten messages the odd rank receives with Irecv and
             Wait; the main thread runs an allreduce meanwhile. The
             receivers print how long they waited (the sender puts the
             time it sends in the message; time.monotonic is
             CLOCK_MONOTONIC, one clock for the ranks of one host).
  pickle5    mpi4py.util.pkl5 (pickle protocol 5, out-of-band buffers of
             1 MiB): ssend (MPI_Issend), issend, send/recv (MPI_Mprobe,
             MPI_Mrecv), improbe, isend, sendrecv, bcast; probes of
             MPI_PROC_NULL; and a large buffer received after MPI_Probe
             with ANY_SOURCE.

    dtrun -np 4 python3 families.py requests && dtpa python3
"""
import array
import os
import sys
import tempfile
import threading
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


def requests():
    # Nonblocking file I/O, each request waited with MPI_Wait.
    path = os.path.join(tempfile.gettempdir(), "families.py.dat")
    fh = MPI.File.Open(comm, path, MPI.MODE_CREATE | MPI.MODE_RDWR | MPI.MODE_DELETE_ON_CLOSE)
    n = 64
    out = array.array("i", [rank] * n)
    got = array.array("i", [0] * n)
    off = rank * n * 4
    fh.Iwrite_at(off, out).Wait()
    fh.Iread_at(off, got).Wait()
    assert got == out
    fh.Iwrite_at_all(off + size * n * 4, out).Wait()
    fh.Iread_at_all(off + size * n * 4, got).Wait()
    fh.Set_view(2 * size * n * 4 + off)
    fh.Iwrite(out).Wait()
    fh.Seek(0)
    fh.Iread(got).Wait()
    fh.Set_view(3 * size * n * 4)
    fh.Iwrite_all(out).Wait()
    fh.Seek(0)
    fh.Iread_all(got).Wait()
    fh.Close()

    # A generalized request, completed before its wait; another cancelled.
    def nothing(*a):
        pass

    def query(status, *a):
        status.Set_source(MPI.UNDEFINED)
        status.Set_tag(MPI.UNDEFINED)
        status.Set_elements(MPI.BYTE, 0)
        status.Set_cancelled(False)

    g = MPI.Grequest.Start(query, nothing, nothing)
    g.Complete()
    g.Wait()
    g = MPI.Grequest.Start(query, nothing, nothing)
    g.Cancel()
    g.Complete()
    g.Test()

    # MPI_Comm_idup: the new communicator is used once the request is done.
    dup, req = comm.Idup()
    req.Wait()
    assert dup.allreduce(1) == size

    # Nonblocking collectives.
    buf = array.array("i", [rank])
    res = array.array("i", [0])
    reqs = [dup.Ibarrier(), dup.Iallreduce(buf, res)]
    MPI.Request.Waitall(reqs)
    allv = array.array("i", [0] * size)
    r1 = dup.Ibcast(buf, root=1)
    r1.Wait()
    r2 = dup.Iallgather(array.array("i", [rank]), allv)
    while not r2.Test():
        pass
    r3 = dup.Ialltoall(array.array("i", range(size)), allv)
    r4 = dup.Igather(array.array("i", [rank]), allv if rank == 0 else None, root=0)
    r5 = dup.Iscan(array.array("i", [rank]), res)
    MPI.Request.Waitall([r3, r4, r5])
    dup.Free()

    # Persistent point-to-point, three rounds around a ring.
    sbuf, rbuf = array.array("i", [rank]), array.array("i", [0])
    ps = [comm.Send_init(sbuf, (rank + 1) % size, tag=3),
          comm.Recv_init(rbuf, (rank - 1) % size, tag=3)]
    for _ in range(3):
        MPI.Prequest.Startall(ps)
        MPI.Request.Waitall(ps)
        assert rbuf[0] == (rank - 1) % size
    for p in ps:
        p.Free()

    # Request-based RMA in a passive-target epoch.
    mem = array.array("i", [0] * size)
    win = MPI.Win.Create(mem, comm=comm)
    win.Lock_all()
    tgt = (rank + 1) % size
    win.Rput(array.array("i", [rank]), tgt, target=(rank, 1, MPI.INT)).Wait()
    win.Flush(tgt)
    back = array.array("i", [0])
    win.Rget(back, tgt, target=(rank, 1, MPI.INT)).Wait()
    win.Raccumulate(array.array("i", [1]), tgt, target=(rank, 1, MPI.INT), op=MPI.SUM).Wait()
    win.Unlock_all()
    comm.Barrier()
    win.Free()


def intercomm():
    color = rank % 2
    local = comm.Split(color, rank)
    inter = local.Create_intercomm(0, comm, 1 - color, tag=12)
    lr, remote = local.Get_rank(), inter.Get_remote_size()
    # Point-to-point: rank lr of one group with rank lr of the other.
    v = array.array("i", [rank])
    w = array.array("i", [0])
    if color == 0:
        inter.Send(v, dest=lr, tag=1)
        inter.Recv(w, source=lr, tag=2)
    else:
        inter.Recv(w, source=lr, tag=1)
        inter.Send(v, dest=lr, tag=2)
    reqs = [inter.Isend(v, dest=lr, tag=3), inter.Irecv(w, source=MPI.ANY_SOURCE, tag=3)]
    MPI.Request.Waitall(reqs)
    inter.Sendrecv(v, dest=lr, sendtag=4, recvbuf=w, source=lr, recvtag=4)
    # Rooted collectives, each group the root once.
    for root_group in (0, 1):
        if color == root_group:
            root = MPI.ROOT if lr == 0 else MPI.PROC_NULL
        else:
            root = 0
        isroot = root == MPI.ROOT
        b = array.array("i", [7])
        inter.Bcast(b, root=root)
        rv = array.array("i", [0] * remote)
        inter.Gather(v, rv if isroot else None, root=root)
        inter.Scatter(array.array("i", range(remote)) if isroot else None, w, root=root)
        inter.Reduce(v, rv[:1] if isroot else None, op=MPI.SUM, root=root)
    # All-to-all collectives span both groups.
    rv = array.array("i", [0] * remote)
    inter.Allreduce(v, w)
    inter.Iallreduce(v, w).Wait()
    inter.Allgather(v, rv)
    inter.Alltoall(array.array("i", [rank] * remote), rv)
    inter.Barrier()
    # A nonblocking duplicate of the intercommunicator.
    idup, req = inter.Idup()
    req.Wait()
    idup.Allreduce(v, w)
    idup.Free()
    merged = inter.Merge(color == 1)
    merged.Allreduce(v, w)
    merged.Free()
    inter.Free()
    local.Free()


def threads():
    partner = rank ^ 1
    assert MPI.Query_thread() == MPI.THREAD_MULTIPLE

    def thread_a():
        if rank % 2 == 0:
            t0 = time.monotonic()
            t = comm.recv(source=partner, tag=1)
            print("threads: rank %d waited %.6f s" % (rank, max(t - t0, 0.0)), flush=True)
        else:
            if rank == 1:
                time.sleep(0.2)
            comm.send(time.monotonic(), dest=partner, tag=1)

    def thread_b():
        for i in range(10):
            v = array.array("i", [rank * 100 + i])
            if rank % 2 == 0:
                comm.Send(v, dest=partner, tag=2)
            else:
                comm.Irecv(v, source=partner, tag=2).Wait()

    dup = comm.Dup()
    ts = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for t in ts:
        t.start()
    dup.Allreduce(array.array("i", [rank]), array.array("i", [0]))
    for t in ts:
        t.join()
    dup.Free()


def pickle5():
    from mpi4py.util import pkl5
    pc = pkl5.Intracomm(comm)
    big = bytearray(1 << 20)
    partner = rank ^ 1
    if rank % 2 == 0:
        pc.ssend(big, dest=partner, tag=1)
        pc.issend(big, dest=partner, tag=2).wait()
        pc.send(big, dest=partner, tag=3)
        pc.isend({"small": rank}, dest=partner, tag=4).wait()
    else:
        assert len(pc.recv(source=partner, tag=1)) == len(big)
        msg = None
        while msg is None:
            msg = pc.improbe(source=partner, tag=2)
        assert len(msg.recv()) == len(big)
        assert len(pc.mprobe(source=MPI.ANY_SOURCE, tag=3).recv()) == len(big)
        assert pc.recv(source=partner, tag=4) == {"small": partner}
    got = pc.sendrecv(big, dest=partner, sendtag=5, source=partner, recvtag=5)
    assert len(got) == len(big)
    assert len(pc.bcast(big if rank == 0 else None, root=0)) == len(big)
    # Probes of MPI_PROC_NULL: MPI_MESSAGE_NO_PROC, received at once.
    comm.Mprobe(source=MPI.PROC_NULL).Recv(bytearray(4))
    comm.Probe(source=MPI.PROC_NULL)
    comm.Issend(bytearray(4), dest=MPI.PROC_NULL).Wait()
    # A large message received after MPI_Probe: the size comes from the
    # status.
    if rank == 0:
        for src in range(1, size):
            st = MPI.Status()
            comm.Probe(source=MPI.ANY_SOURCE, tag=6, status=st)
            buf = bytearray(st.Get_count(MPI.BYTE))
            comm.Recv(buf, source=st.Get_source(), tag=6)
    else:
        comm.Issend(bytearray(b"x" * (1 << 20)), dest=0, tag=6).Wait()
    comm.Barrier()


if __name__ == "__main__":
    family = sys.argv[1]
    {"requests": requests, "intercomm": intercomm, "threads": threads, "pickle5": pickle5}[family]()
    comm.Barrier()
    if rank == 0:
        print("families.py: %s done" % family)
