// A shared object that defines an MPI name, as an MPI library or a PMPI
// tool does: srcchar leaves its frames out whatever the file is called.
volatile int fake_sink;

__attribute__((noinline)) int PMPI_Fake(void (*f)(void)) {
	f(); /* FAKEMPI */
	fake_sink++;
	return 0;
}
