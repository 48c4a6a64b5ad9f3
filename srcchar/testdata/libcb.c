// Shared library for srcchar's tests: the callback's return address lies
// in this library.
volatile int lib_sink;

__attribute__((noinline)) void lib_call(void (*f)(void)) {
	f(); /* LIBCALL */
	lib_sink++;
}

// A local function named as glibc names its start-up code: stripped, the
// library's own symbol tables do not name it, its separate debug file
// does.
static __attribute__((noinline)) void __libc_start_fake(void (*f)(void)) {
	f(); /* STARTUP */
	lib_sink++;
}

__attribute__((noinline)) void lib_start(void (*f)(void)) {
	__libc_start_fake(f);
	lib_sink++;
}
