# rmpi_spmd.R: an R program (Rmpi) run as SPMD under mpirun/dtrun, for
# dtpa's end-to-end tests. After a barrier (R starts in different times on
# each rank), rank r sleeps r × 50 ms before an allreduce, so rank 0 waits
# 150 ms there (Potential Sync); then a broadcast and a ring exchange with
# mpi.sendrecv.
suppressMessages(library(Rmpi))
r <- mpi.comm.rank(0); n <- mpi.comm.size(0)
mpi.barrier(0)
Sys.sleep(0.05 * r)
tot <- mpi.allreduce(sum(as.numeric((r * 1000 + 1):((r + 1) * 1000))), type = 2, op = "sum", comm = 0)
v <- mpi.bcast(if (r == 0) c(1.5, 2.5, 3.5) else double(3), type = 2, rank = 0, comm = 0)
got <- mpi.sendrecv(as.integer(rep(r, 100)), 1, (r + 1) %% n, 7, integer(100), 1, (r - 1 + n) %% n, 7, comm = 0)
mpi.barrier(0)
if (r == 0) cat(sprintf("rmpi: total %.0f bcast %.1f ring %d\n", tot, sum(v), got[1]))
invisible(mpi.finalize())
