// Test program for srcchar: prints, for call sites marked by comments, the
// return address as "tag module offset" (offset in the module's ELF address
// space, EXE for the program), which the test symbolizes and compares with
// the marked lines.
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <stdio.h>

void lib_call(void (*f)(void));
void lib_start(void (*f)(void));
int PMPI_Fake(void (*f)(void));

volatile int sink;

struct query {
	uintptr_t addr;
	const char *name;
	uintptr_t off;
};

static int find(struct dl_phdr_info *info, size_t size, void *data) {
	struct query *q = data;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + p->p_vaddr;
		if (p->p_type == PT_LOAD && q->addr >= lo && q->addr < lo + p->p_memsz) {
			q->name = info->dlpi_name;
			q->off = q->addr - info->dlpi_addr;
			return 1;
		}
	}
	return 0;
}

__attribute__((noinline)) void where(const char *tag, void *ra) {
	struct query q = {(uintptr_t)ra, 0, 0};
	dl_iterate_phdr(find, &q);
	printf("%s %s %#lx\n", tag, q.name && q.name[0] ? q.name : "EXE", (unsigned long)q.off);
}

__attribute__((noinline)) void leaf_plain(void) { where("plain", __builtin_return_address(0)); sink++; }
__attribute__((noinline)) void leaf_inlined(void) { where("inlined", __builtin_return_address(0)); sink++; }
__attribute__((noinline)) void leaf_lib(void) { where("lib", __builtin_return_address(0)); sink++; }
__attribute__((noinline)) void leaf_mpi(void) { where("mpi", __builtin_return_address(0)); sink++; }
__attribute__((noinline)) void leaf_start(void) { where("startup", __builtin_return_address(0)); sink++; }

__attribute__((noinline)) void caller(void) {
	leaf_plain(); /* PLAIN */
	sink++;
}

static inline __attribute__((always_inline)) void helper(void) {
	leaf_inlined(); /* INLINED */
	sink++;
}

__attribute__((noinline)) void outer(void) {
	sink++;
	helper(); /* OUTER */
	sink++;
}

int main(void) {
	caller();
	outer();
	lib_call(leaf_lib);
	lib_start(leaf_start);
	PMPI_Fake(leaf_mpi);
	return 0;
}
