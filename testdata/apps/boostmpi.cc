// boostmpi: C++ objects over MPI with Boost.MPI (Debian's libboost-mpi-dev,
// built with Open MPI), as C++ codes use it. Boost.MPI serializes vectors
// and strings and sends them as messages it then finds with matched probes
// (MPI_Improbe, MPI_Mprobe, MPI_Mrecv; MPI_ANY_SOURCE for the receives
// from any rank), buffers from MPI_Alloc_mem, and collectives of objects
// (an all-gather of strings: MPI_Allgather of the sizes, then
// MPI_Allgatherv). 200 rounds on a ring of the ranks: nonblocking sends and
// receives of a vector and a string, an all-gather, an all-reduce, a
// broadcast of a string and a gather to rank 0 by MPI_ANY_SOURCE receives.
// Rank 0 prints "boost: ok" when everything received was right.
#include <boost/mpi.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <iostream>
#include <string>
#include <vector>
namespace mpi = boost::mpi;
int main(int argc, char **argv) {
	mpi::environment env(argc, argv);
	mpi::communicator world;
	int r = world.rank(), n = world.size();
	bool ok = true;
	for (int it = 0; it < 200; it++) {
		std::vector<int> out(100 + it, r), in;
		std::string s = "from " + std::to_string(r);
		std::string got;
		mpi::request reqs[4];
		reqs[0] = world.isend((r + 1) % n, 1, out);
		reqs[1] = world.irecv((r + n - 1) % n, 1, in);
		reqs[2] = world.isend((r + 1) % n, 2, s);
		reqs[3] = world.irecv((r + n - 1) % n, 2, got);
		mpi::wait_all(reqs, reqs + 4);
		ok = ok && in.size() == out.size() && in[0] == (r + n - 1) % n && got == "from " + std::to_string((r + n - 1) % n);
		std::vector<std::string> all;
		mpi::all_gather(world, s, all);
		ok = ok && all.size() == (size_t)n && all[n - 1] == "from " + std::to_string(n - 1);
		int sum = mpi::all_reduce(world, r, std::plus<int>());
		ok = ok && sum == n * (n - 1) / 2;
		std::string b = r == 0 ? "root" : "";
		mpi::broadcast(world, b, 0);
		ok = ok && b == "root";
		if (r == 0) {
			for (int k = 1; k < n; k++) {
				std::string m;
				mpi::status st = world.recv(mpi::any_source, 3, m);
				ok = ok && m == "hi " + std::to_string(st.source());
			}
		} else
			world.send(0, 3, "hi " + std::to_string(r));
	}
	bool all = mpi::all_reduce(world, ok, std::logical_and<bool>());
	if (r == 0) std::cout << (all ? "boost: ok" : "boost: WRONG") << std::endl;
	return all ? 0 : 1;
}
