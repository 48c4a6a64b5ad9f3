/* h5io: parallel HDF5 over MPI-IO, as simulation codes write their
 * checkpoints. Each of the ranks owns a block of rows of a 2-D dataset:
 * it writes them collectively (H5FD_MPIO_COLLECTIVE: MPI_File_write_at_all
 * underneath), writes a second dataset independently, adds an attribute,
 * closes the file, reopens it read-only and reads everything back
 * collectively, then checks every value. Between the two phases it also
 * calls MPI-IO directly (MPI_File_open, set_view with a derived datatype,
 * write_all, read_at_all, sync, get_size, close): interval 1 is the MPI-IO
 * phase, interval 2 the HDF5 one (MPI_Pcontrol).
 *
 * The HDF5 library calls MPI itself (MPI_Comm_dup, MPI_Allreduce,
 * MPI_Bcast, MPI_Barrier, derived datatypes, MPI_File_* ...), and registers
 * an attribute on MPI_COMM_SELF whose delete callback shuts HDF5 down
 * inside MPI_Finalize; with argument "leak" the file is left open, so that
 * HDF5 closes it (MPI_File_close, collective) from inside MPI_Finalize.
 *
 * It prints "h5io: ok" on rank 0 when every value read back is right and
 * exits 1 otherwise. Build: mpicc -I<hdf5 include> -L<hdf5 lib> -lhdf5. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 64 /* per rank */
#define COLS 256

static int failed;

static void check(int ok, const char *what) {
	if (!ok) {
		fprintf(stderr, "h5io: %s failed\n", what);
		failed = 1;
	}
}

static double value(int set, long row, long col) {
	return set * 1e6 + row * COLS + col;
}

/* hdf5_phase writes and reads back two datasets of nranks*ROWS x COLS. */
static void hdf5_phase(MPI_Comm comm, int rank, int nranks, int leak) {
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
	hid_t file = H5Fcreate("h5io.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	check(file >= 0, "H5Fcreate");

	hsize_t dims[2] = {(hsize_t)nranks * ROWS, COLS};
	hid_t space = H5Screate_simple(2, dims, NULL);
	hid_t dsets[2];
	dsets[0] = H5Dcreate2(file, "collective", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	dsets[1] = H5Dcreate2(file, "independent", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);

	hsize_t start[2] = {(hsize_t)rank * ROWS, 0}, count[2] = {ROWS, COLS};
	hid_t mem = H5Screate_simple(2, count, NULL);
	H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);

	double *buf = malloc(sizeof(double) * ROWS * COLS);
	for (int set = 0; set < 2; set++) {
		for (long r = 0; r < ROWS; r++)
			for (long c = 0; c < COLS; c++)
				buf[r * COLS + c] = value(set, rank * ROWS + r, c);
		hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
		H5Pset_dxpl_mpio(xfer, set == 0 ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
		check(H5Dwrite(dsets[set], H5T_NATIVE_DOUBLE, mem, space, xfer, buf) >= 0, "H5Dwrite");
		H5Pclose(xfer);
	}

	int nr = nranks;
	hid_t ascalar = H5Screate(H5S_SCALAR);
	hid_t attr = H5Acreate2(dsets[0], "ranks", H5T_NATIVE_INT, ascalar, H5P_DEFAULT, H5P_DEFAULT);
	H5Awrite(attr, H5T_NATIVE_INT, &nr);
	H5Aclose(attr);
	H5Sclose(ascalar);
	for (int set = 0; set < 2; set++)
		H5Dclose(dsets[set]);
	H5Fclose(file);

	/* Read back, collectively. */
	file = H5Fopen("h5io.h5", H5F_ACC_RDONLY, fapl);
	check(file >= 0, "H5Fopen");
	for (int set = 0; set < 2; set++) {
		hid_t d = H5Dopen2(file, set == 0 ? "collective" : "independent", H5P_DEFAULT);
		hid_t fs = H5Dget_space(d);
		H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
		hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
		H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE);
		memset(buf, 0, sizeof(double) * ROWS * COLS);
		check(H5Dread(d, H5T_NATIVE_DOUBLE, mem, fs, xfer, buf) >= 0, "H5Dread");
		for (long r = 0; r < ROWS; r++)
			for (long c = 0; c < COLS; c++)
				if (buf[r * COLS + c] != value(set, rank * ROWS + r, c)) {
					check(0, "HDF5 data read back");
					r = ROWS;
					break;
				}
		H5Pclose(xfer);
		H5Sclose(fs);
		H5Dclose(d);
	}
	H5Sclose(mem);
	H5Sclose(space);
	H5Pclose(fapl);
	if (!leak)
		H5Fclose(file);
	free(buf);
}

/* mpiio_phase: each rank writes its rows of an int matrix through a view
 * (a subarray type), collectively, and reads its neighbour's back. */
static void mpiio_phase(MPI_Comm comm, int rank, int nranks) {
	MPI_File fh;
	check(MPI_File_open(comm, "h5io.raw", MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) == MPI_SUCCESS,
	      "MPI_File_open");
	int sizes[2] = {nranks * ROWS, COLS}, sub[2] = {ROWS, COLS}, starts[2] = {rank * ROWS, 0};
	MPI_Datatype rows;
	MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &rows);
	MPI_Type_commit(&rows);
	MPI_File_set_view(fh, 0, MPI_INT, rows, "native", MPI_INFO_NULL);
	int *w = malloc(sizeof(int) * ROWS * COLS), *r = malloc(sizeof(int) * ROWS * COLS);
	for (int i = 0; i < ROWS * COLS; i++)
		w[i] = rank * ROWS * COLS + i;
	MPI_File_write_all(fh, w, ROWS * COLS, MPI_INT, MPI_STATUS_IGNORE);
	MPI_File_sync(fh);
	MPI_Barrier(comm);
	MPI_File_sync(fh);
	MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
	int next = (rank + 1) % nranks;
	MPI_Offset off = (MPI_Offset)next * ROWS * COLS * sizeof(int);
	MPI_Status st;
	MPI_File_read_at_all(fh, off, r, ROWS * COLS * (int)sizeof(int), MPI_BYTE, &st);
	int n;
	MPI_Get_count(&st, MPI_BYTE, &n);
	check(n == ROWS * COLS * (int)sizeof(int), "MPI_File_read_at_all count");
	for (int i = 0; i < ROWS * COLS; i++)
		if (r[i] != next * ROWS * COLS + i) {
			check(0, "MPI-IO data read back");
			break;
		}
	MPI_Offset size;
	MPI_File_get_size(fh, &size);
	check(size == (MPI_Offset)nranks * ROWS * COLS * sizeof(int), "MPI_File_get_size");
	MPI_File_close(&fh);
	MPI_Type_free(&rows);
	free(w);
	free(r);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, nranks;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	int leak = argc > 1 && strcmp(argv[1], "leak") == 0;

	MPI_Pcontrol(100, 1);
	mpiio_phase(MPI_COMM_WORLD, rank, nranks);
	MPI_Pcontrol(101, 1);
	MPI_Pcontrol(100, 2);
	hdf5_phase(MPI_COMM_WORLD, rank, nranks, leak);
	MPI_Pcontrol(101, 2);

	int all;
	MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0 && !all)
		printf("h5io: ok\n");
	if (rank == 0) {
		MPI_File_delete("h5io.raw", MPI_INFO_NULL);
	}
	MPI_Finalize();
	return all ? 1 : 0;
}
