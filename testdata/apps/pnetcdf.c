/* pnetcdf: a 2-D variable written and read back with PnetCDF, the parallel
 * netCDF library over MPI-IO, as climate and ocean codes write their
 * fields. Each rank owns ROWS rows of the nranks*ROWS x COLS int variable
 * "field". Interval 1 (MPI_Pcontrol) creates the file with MPI-IO hints
 * (collective buffering on, one aggregator per two ranks), defines it and
 * writes each rank's rows as two nonblocking requests of ROWS / 2 rows
 * (ncmpi_iput_vara_int) that ncmpi_wait_all completes in one collective
 * write; interval 2 reopens the file read-only and reads the rows back
 * through two nonblocking requests again (ncmpi_iget_vara_int,
 * ncmpi_wait_all), then rank 0 reads the whole variable independently
 * (ncmpi_begin_indep_data, ncmpi_get_var_int). Every value read must be
 * the one written.
 *
 * It prints "pnetcdf: ok" on rank 0 when all are and exits 1 otherwise.
 * Build: mpicc pnetcdf.c -lpnetcdf. */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROWS 32 /* per rank, even */
#define COLS 128

static int failed;

#include "bracket.h"

static void check(int err, const char *what) {
	if (err != NC_NOERR) {
		fprintf(stderr, "pnetcdf: %s: %s\n", what, ncmpi_strerror(err));
		failed = 1;
	}
}

static int value(long row, long col) {
	return (int)(row * COLS + col);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, nranks;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);

	int *rows = malloc(sizeof(int) * ROWS * COLS);
	for (long r = 0; r < ROWS; r++)
		for (long c = 0; c < COLS; c++)
			rows[r * COLS + c] = value((long)rank * ROWS + r, c);

	enter(1);
	MPI_Info info;
	MPI_Info_create(&info);
	MPI_Info_set(info, "romio_cb_write", "enable");
	MPI_Info_set(info, "cb_nodes", nranks > 1 ? "2" : "1");
	MPI_Info_set(info, "nc_header_align_size", "1024");
	int nc, dims[2], var;
	check(ncmpi_create(MPI_COMM_WORLD, "pnetcdf.nc", NC_CLOBBER | NC_64BIT_DATA, info, &nc), "ncmpi_create");
	MPI_Info_free(&info);
	check(ncmpi_def_dim(nc, "y", (MPI_Offset)nranks * ROWS, &dims[0]), "ncmpi_def_dim y");
	check(ncmpi_def_dim(nc, "x", COLS, &dims[1]), "ncmpi_def_dim x");
	check(ncmpi_def_var(nc, "field", NC_INT, 2, dims, &var), "ncmpi_def_var");
	check(ncmpi_put_att_text(nc, var, "units", 1, "1"), "ncmpi_put_att_text");
	check(ncmpi_enddef(nc), "ncmpi_enddef");
	int req[2], st[2];
	for (int h = 0; h < 2; h++) {
		MPI_Offset start[2] = {(MPI_Offset)rank * ROWS + h * ROWS / 2, 0}, count[2] = {ROWS / 2, COLS};
		check(ncmpi_iput_vara_int(nc, var, start, count, rows + h * ROWS / 2 * COLS, &req[h]), "ncmpi_iput_vara_int");
	}
	check(ncmpi_wait_all(nc, 2, req, st), "ncmpi_wait_all (put)");
	check(st[0], "put request 0");
	check(st[1], "put request 1");
	check(ncmpi_close(nc), "ncmpi_close");
	leave(1);

	enter(2);
	int *back = calloc(ROWS * COLS, sizeof(int));
	check(ncmpi_open(MPI_COMM_WORLD, "pnetcdf.nc", NC_NOWRITE, MPI_INFO_NULL, &nc), "ncmpi_open");
	check(ncmpi_inq_varid(nc, "field", &var), "ncmpi_inq_varid");
	for (int h = 0; h < 2; h++) {
		MPI_Offset start[2] = {(MPI_Offset)rank * ROWS + h * ROWS / 2, 0}, count[2] = {ROWS / 2, COLS};
		check(ncmpi_iget_vara_int(nc, var, start, count, back + h * ROWS / 2 * COLS, &req[h]), "ncmpi_iget_vara_int");
	}
	check(ncmpi_wait_all(nc, 2, req, st), "ncmpi_wait_all (get)");
	check(st[0], "get request 0");
	check(st[1], "get request 1");
	for (long i = 0; i < ROWS * COLS; i++)
		if (back[i] != rows[i]) {
			fprintf(stderr, "pnetcdf: rank %d read %d at %ld, wrote %d\n", rank, back[i], i, rows[i]);
			failed = 1;
			break;
		}
	check(ncmpi_begin_indep_data(nc), "ncmpi_begin_indep_data");
	if (rank == 0) {
		int *all = malloc(sizeof(int) * nranks * ROWS * COLS);
		check(ncmpi_get_var_int(nc, var, all), "ncmpi_get_var_int");
		for (long i = 0; i < (long)nranks * ROWS * COLS; i++)
			if (all[i] != value(i / COLS, i % COLS)) {
				fprintf(stderr, "pnetcdf: rank 0 read %d at %ld of the whole variable\n", all[i], i);
				failed = 1;
				break;
			}
		free(all);
	}
	check(ncmpi_end_indep_data(nc), "ncmpi_end_indep_data");
	check(ncmpi_close(nc), "ncmpi_close (read)");
	leave(2);

	MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (rank == 0)
		printf(failed ? "pnetcdf: WRONG\n" : "pnetcdf: ok\n");
	print_timing("pnetcdf", rank);
	free(rows);
	free(back);
	MPI_Finalize();
	return failed;
}
