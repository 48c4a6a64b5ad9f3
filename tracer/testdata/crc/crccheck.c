// crccheck prints the CRC-32C that the tracer's writer computes
// (rt/dt_crc.h) of pieces of a file: crccheck FILE [sw] OFF:LEN:INIT...
// prints one CRC per piece (in hex), continuing from INIT (hex); "sw"
// takes the table path the writer takes on a CPU without SSE 4.2.
#include "dt_crc.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	if (argc < 2) return 2;
	FILE *f = fopen(argv[1], "rb");
	if (!f) return 2;
	static unsigned char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	dt_crc_init();
	int i = 2;
	if (i < argc && strcmp(argv[i], "sw") == 0) dt_crc_hw = 0, i++;
	for (; i < argc; i++) {
		unsigned long off, len, init;
		if (sscanf(argv[i], "%lu:%lu:%lx", &off, &len, &init) != 3 || off + len > n) return 2;
		printf("%08x\n", dt_crc32c((uint32_t)init, buf + off, len));
	}
	return 0;
}
