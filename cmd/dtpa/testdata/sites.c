// Three call sites at known lines for dtpa's SRC ordering test: the test
// builds it with gcc -g -no-pie and records synthetic traces whose return
// addresses are the addresses of the marked lines.
volatile int sink;

__attribute__((noinline)) void mpi(void) { sink++; }

void first(void) { mpi(); /* FIRST */ }

void second(void) { mpi(); /* SECOND */ }

void third(void) { mpi(); /* THIRD */ }

int main(void) {
	first();
	second();
	third();
	return 0;
}
