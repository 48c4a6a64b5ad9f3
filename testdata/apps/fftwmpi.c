/* fftwmpi: a distributed 3-D complex FFT with FFTW's MPI interface
 * (fftw_mpi_plan_dft_3d), forward then backward, as spectral codes do it.
 * The N0 x N1 x N2 array is distributed in slabs of N0 / nranks planes;
 * the forward transform leaves its output transposed
 * (FFTW_MPI_TRANSPOSED_OUT: slabs of N1 / nranks planes of the N1 x N0 x
 * N2 result) and the backward one takes it so (FFTW_MPI_TRANSPOSED_IN), so
 * that each transform makes exactly one global transpose of the whole
 * array: N0 * N1 * N2 complex numbers of 16 bytes, of which each rank
 * keeps its own 1 / nranks and sends the rest. Interval 1 is the forward
 * transform, interval 2 the backward one (MPI_Pcontrol); the plans are
 * made before (FFTW_ESTIMATE: no measuring runs).
 *
 * The forward transform must hold, at frequencies (f, 0, 0) for f < 4,
 * the sums of the input times exp(-2 pi i f x / N0) (computed directly and
 * summed with MPI_Allreduce); the backward one, divided by N0 N1 N2, must
 * give the input back. It prints "fftwmpi: ok" on rank 0 when all hold
 * and exits 1 otherwise. Build: mpicc fftwmpi.c -lfftw3_mpi -lfftw3 -lm. */
#include <complex.h>
#include <fftw3-mpi.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { N0 = 32, N1 = 32, N2 = 16 };

#include "bracket.h"

/* input is the value at global point (i, j, k): a constant, a cosine along
 * N0 (frequency 3) and a deterministic ramp that is not periodic, so that
 * every transposed block carries data that matter. */
static double complex input(ptrdiff_t i, ptrdiff_t j, ptrdiff_t k) {
	return 1.0 + cos(2 * M_PI * 3 * i / N0) + 1e-3 * (i * N1 * N2 + j * N2 + k) * I;
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	fftw_mpi_init();
	int rank, nranks;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);

	ptrdiff_t n0, start0, n1, start1;
	ptrdiff_t alloc = fftw_mpi_local_size_3d_transposed(N0, N1, N2, MPI_COMM_WORLD, &n0, &start0, &n1, &start1);
	fftw_complex *data = fftw_alloc_complex(alloc);
	fftw_plan fwd = fftw_mpi_plan_dft_3d(N0, N1, N2, data, data, MPI_COMM_WORLD, FFTW_FORWARD,
	                                     FFTW_ESTIMATE | FFTW_MPI_TRANSPOSED_OUT);
	fftw_plan bwd = fftw_mpi_plan_dft_3d(N0, N1, N2, data, data, MPI_COMM_WORLD, FFTW_BACKWARD,
	                                     FFTW_ESTIMATE | FFTW_MPI_TRANSPOSED_IN);
	if (!fwd || !bwd) {
		fprintf(stderr, "fftwmpi: no plan\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	double complex *d = (double complex *)data;
	double complex want[4] = {0};
	for (ptrdiff_t i = 0; i < n0; i++)
		for (ptrdiff_t j = 0; j < N1; j++)
			for (ptrdiff_t k = 0; k < N2; k++) {
				double complex v = input(start0 + i, j, k);
				d[(i * N1 + j) * N2 + k] = v;
				for (int f = 0; f < 4; f++)
					want[f] += v * cexp(-2 * M_PI * I * f * (start0 + i) / N0);
			}
	MPI_Allreduce(MPI_IN_PLACE, want, 4, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);

	enter(1);
	fftw_execute(fwd);
	leave(1);

	/* Transposed output: local index (j, i, k), j from start1; the rank
	 * holding j = 0 checks frequencies (f, 0, 0). */
	int bad = 0;
	const double n = (double)N0 * N1 * N2;
	if (start1 == 0 && n1 > 0)
		for (int f = 0; f < 4; f++)
			if (cabs(d[f * N2] - want[f]) > 1e-9 * n)
				bad = 1;

	enter(2);
	fftw_execute(bwd);
	leave(2);

	for (ptrdiff_t i = 0; i < n0; i++)
		for (ptrdiff_t j = 0; j < N1; j++)
			for (ptrdiff_t k = 0; k < N2; k++)
				if (cabs(d[(i * N1 + j) * N2 + k] / n - input(start0 + i, j, k)) > 1e-9)
					bad = 1;
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (rank == 0)
		printf(bad ? "fftwmpi: WRONG\n" : "fftwmpi: ok\n");
	print_timing("fftwmpi", rank);

	fftw_destroy_plan(fwd);
	fftw_destroy_plan(bwd);
	fftw_free(data);
	fftw_mpi_cleanup();
	MPI_Finalize();
	return bad;
}
