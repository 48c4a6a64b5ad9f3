// cxxthrow: rank 1 throws a C++ exception that no handler catches, two
// calls deep (@throw in solve, called from step at @step): the C++ runtime
// calls std::terminate, which calls abort(). The argument picks the
// exception: "std" std::out_of_range, "custom" app::BadInput (a class of
// the program's own); "caught" throws one and catches it, then calls
// abort() itself (@abort): no exception is being handled then. The other
// ranks wait in MPI_Barrier until the launcher ends them.
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace app {
struct BadInput {
	int code;
};
} // namespace app

static void solve(const char *how) {
	if (std::strcmp(how, "custom") == 0)
		throw app::BadInput{7}; // @custom
	throw std::out_of_range("index 7 past the end"); // @throw
}

static void step(const char *how) {
	if (std::strcmp(how, "caught") == 0) {
		try {
			solve("std");
		} catch (const std::exception &) {
		}
		std::abort(); // @abort
	}
	solve(how); // @step
}

int main(int argc, char **argv) {
	int rank;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1)
		step(argc > 1 ? argv[1] : "std");
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
