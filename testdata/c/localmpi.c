// Loads MPI the way Python extensions do: a module linked with MPI, opened
// RTLD_LOCAL, so that MPI is not in the global scope.
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
	if (argc < 2) return 2;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
	int (*run)(void) = (int (*)(void))dlsym(h, "ext_run");
	return run();
}
