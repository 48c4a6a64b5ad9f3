# rmpi_spawn.R: Rmpi's master/slave use, for dtpa's end-to-end tests: one
# master spawns 2 R slaves (MPI_Comm_spawn, merged with them into one
# communicator) and hands them work.
suppressMessages(library(Rmpi))
mpi.spawn.Rslaves(nslaves = 2, quiet = TRUE)
res <- mpi.remote.exec(sum(seq_len(1000 * mpi.comm.rank())))
r <- mpi.applyLB(1:8, function(i) i^2)
cat(sprintf("rmpi: slaves %s squares %d\n", paste(unlist(res), collapse = " "), sum(unlist(r))))
mpi.close.Rslaves()
mpi.quit()
