// libnounw.so for deepstack.c, built -O2 -fomit-frame-pointer
// -fno-asynchronous-unwind-tables -fno-unwind-tables (and without -g, whose
// .debug_frame would describe it): a frame nothing can unwind.
volatile int nounw_count;

void nounw_call(void (*f)(int), int x) {
	f(x);
	nounw_count++;
}
