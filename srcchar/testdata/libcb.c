// Shared library for srcchar's tests: the callback's return address lies
// in this library.
volatile int lib_sink;

__attribute__((noinline)) void lib_call(void (*f)(void)) {
	f(); /* LIBCALL */
	lib_sink++;
}
