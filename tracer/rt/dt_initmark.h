// Noting that a process is inside the MPI library's MPI_Init, for dtrun: a
// job that hangs there (a rank that never started, a launcher that cannot
// reach a node) has no trace yet, and without the note dtrun could only
// say that nothing was written. libc only: the preload stub includes it.
#ifndef DT_INITMARK_H
#define DT_INITMARK_H

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

// dt_boot_id reads the node's boot id into id (size bytes; "" when it
// cannot): the same for every process of the node until it reboots, and
// so the domain of its CLOCK_MONOTONIC_RAW readings, which dtrun compares
// with its own (records.BootID) before it puts its clock beside theirs.
static inline void dt_boot_id(char *id, size_t size) {
	id[0] = 0;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return;
	ssize_t n = read(fd, id, size - 1);
	close(fd);
	id[n > 0 ? n : 0] = 0;
	id[strcspn(id, "\n")] = 0;
}

// dt_init_mark creates init.<pid> in the job's spill directory
// (DT_SPILL_DIR, which dtrun sets), locked while the process lives, and
// writes into it when the call began (ns, CLOCK_MONOTONIC_RAW), the node's
// boot id (the clock's domain) and the world rank the launcher gave (-1
// when none says). It returns the descriptor (-1: no spill directory, or
// the file could not be made) and leaves the path in path (PATH_MAX).
// dtrun reads the files of processes that died inside the call
// (cmd/dtrun, initMarks).
static inline int dt_init_mark(int64_t ns, char *path) {
	const char *dir = getenv("DT_SPILL_DIR");
	if (!dir || !*dir) return -1;
	if (snprintf(path, PATH_MAX, "%s/init.%d", dir, (int)getpid()) >= PATH_MAX) return -1;
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0) return -1;
	flock(fd, LOCK_EX | LOCK_NB);
	char boot[64];
	dt_boot_id(boot, sizeof boot);
	const char *rank = getenv("OMPI_COMM_WORLD_RANK");
	if (!rank) rank = getenv("PMI_RANK");
	if (!rank) rank = getenv("PMIX_RANK");
	char b[160];
	int n = snprintf(b, sizeof b, "%lld %s %d\n", (long long)ns, boot[0] ? boot : "-", rank ? atoi(rank) : -1);
	if (n > 0 && write(fd, b, (size_t)n) != n) {
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

// dt_init_unmark removes the note once the MPI library's MPI_Init returned.
static inline void dt_init_unmark(int fd, const char *path) {
	if (fd < 0) return;
	unlink(path);
	close(fd);
}

#endif
