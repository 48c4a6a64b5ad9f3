// lastrank: every rank sends one message around a ring and calls
// MPI_Finalize; rank 0 then stays on, as a program that writes its
// output after MPI_Finalize does, until the other ranks' traces are
// compacted (their files no longer deferred: the preamble's major version
// is not 0xDxxx) or 20 s have passed, and says which. Under dtrun the
// other ranks' traces are compacted as their ranks end, while the job
// still runs (cmd/dtrun, earlyCompactor).
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int deferred(const char *path) {
	unsigned char pre[12];
	FILE *f = fopen(path, "rb");
	if (!f) return 1;
	size_t n = fread(pre, 1, sizeof pre, f);
	fclose(f);
	return n < sizeof pre || (pre[9] & 0xF0) == 0xD0;
}

int main(int argc, char **argv) {
	int rank, size, v = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Sendrecv_replace(&v, 1, MPI_INT, (rank + 1) % size, 1, (rank + size - 1) % size, 1, MPI_COMM_WORLD,
		MPI_STATUS_IGNORE);
	MPI_Finalize();
	if (rank != 0) return 0;
	int waited = 0, left = size - 1;
	for (; waited < 2000 && left > 0; waited++) {
		left = 0;
		for (int r = 1; r < size; r++) {
			char path[64];
			snprintf(path, sizeof path, "lastrank.%d.trc", r);
			left += deferred(path);
		}
		if (left) usleep(10000);
	}
	printf("lastrank: %d of %d traces still deferred\n", left, size - 1);
	return 0;
}
