// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as traceformat's
// frames carry it, for the writer's raw records frames (dt_cw.c): every
// byte a rank traces passes through it once, on the writer thread, which
// competes with the ranks for their cores.
//
// With SSE 4.2 the crc32 instruction takes 3 cycles and can start one per
// cycle: a single stream of them runs at a third of what the unit can do
// (~21 us per 128 KB buffer here). So the buffer is cut into three
// streams of DT_CRC_LONG bytes (then DT_CRC_SHORT) run in one loop, and
// their registers combined: the register after A B C, started at c, is
// Z(Z(R(c, A)) ^ R(0, B)) ^ R(0, C), where R(x, D) is the register after
// the bytes D from x and Z(x) = R(x, L zero bytes), linear in x (so a table
// per byte of x gives it). Without SSE 4.2, a byte at a time by a table.
#ifndef DT_CRC_H
#define DT_CRC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define DT_CRC_LONG 4096
#define DT_CRC_SHORT 256

static uint32_t dt_crc_tab[256];
static uint32_t dt_crc_zlong[4][256], dt_crc_zshort[4][256]; // Z for L = DT_CRC_LONG, DT_CRC_SHORT
static int dt_crc_hw;

// dt_crc_zeros is Z(x) for the table z.
static inline uint32_t dt_crc_zeros(uint32_t z[4][256], uint32_t x) {
	return z[0][x & 0xff] ^ z[1][(x >> 8) & 0xff] ^ z[2][(x >> 16) & 0xff] ^ z[3][x >> 24];
}

// dt_crc_ztable fills z from Z of each single bit (bit[i] = Z(1 << i)).
static void dt_crc_ztable(uint32_t z[4][256], const uint32_t bit[32]) {
	for (int j = 0; j < 4; j++)
		for (int v = 0; v < 256; v++) {
			uint32_t r = 0;
			for (int i = 0; i < 8; i++)
				if (v >> i & 1) r ^= bit[8 * j + i];
			z[j][v] = r;
		}
}

__attribute__((target("sse4.2"))) static uint32_t dt_crc_1(uint32_t c, const unsigned char *p, size_t n) {
	uint64_t c64 = c;
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
	}
	c = (uint32_t)c64;
	for (; n; n--) c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}

// dt_crc_3 runs three streams of l bytes (a multiple of 8) from p while
// 3 l bytes remain, combined with z (Z for l).
__attribute__((target("sse4.2"))) static inline uint32_t dt_crc_3(uint32_t c, const unsigned char **pp, size_t *np,
								   size_t l, uint32_t z[4][256]) {
	const unsigned char *p = *pp;
	size_t n = *np;
	for (; n >= 3 * l; n -= 3 * l, p += 3 * l) {
		uint64_t c0 = c, c1 = 0, c2 = 0;
		for (size_t i = 0; i < l; i += 8) {
			uint64_t v0, v1, v2;
			memcpy(&v0, p + i, 8);
			memcpy(&v1, p + l + i, 8);
			memcpy(&v2, p + 2 * l + i, 8);
			c0 = __builtin_ia32_crc32di(c0, v0);
			c1 = __builtin_ia32_crc32di(c1, v1);
			c2 = __builtin_ia32_crc32di(c2, v2);
		}
		c = dt_crc_zeros(z, dt_crc_zeros(z, (uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
	}
	*pp = p, *np = n;
	return c;
}

__attribute__((target("sse4.2"))) static uint32_t dt_crc_hw3(uint32_t c, const unsigned char *p, size_t n) {
	c = dt_crc_3(c, &p, &n, DT_CRC_LONG, dt_crc_zlong);
	c = dt_crc_3(c, &p, &n, DT_CRC_SHORT, dt_crc_zshort);
	return dt_crc_1(c, p, n);
}

// dt_crc_init makes the tables; once, before any dt_crc32c.
static void dt_crc_init(void) {
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		dt_crc_tab[i] = c;
	}
	__builtin_cpu_init();
	dt_crc_hw = __builtin_cpu_supports("sse4.2");
	if (!dt_crc_hw) return;
	// Z for DT_CRC_SHORT from the instruction over zeros; for DT_CRC_LONG
	// by applying it DT_CRC_LONG / DT_CRC_SHORT times (a few thousand
	// look-ups, not 128 K of zeros through the instruction).
	static const unsigned char zero[DT_CRC_SHORT];
	uint32_t bit[32];
	for (int i = 0; i < 32; i++) bit[i] = dt_crc_1(1u << i, zero, DT_CRC_SHORT);
	dt_crc_ztable(dt_crc_zshort, bit);
	for (int i = 0; i < 32; i++) {
		uint32_t x = 1u << i;
		for (int k = 0; k < DT_CRC_LONG / DT_CRC_SHORT; k++) x = dt_crc_zeros(dt_crc_zshort, x);
		bit[i] = x;
	}
	dt_crc_ztable(dt_crc_zlong, bit);
}

// dt_crc32c continues crc (0 to start) over p, as Go's crc32.Update does.
static uint32_t dt_crc32c(uint32_t crc, const void *p, size_t n) {
	uint32_t c = ~crc;
	if (dt_crc_hw) return ~dt_crc_hw3(c, p, n);
	const unsigned char *b = p;
	while (n--) c = dt_crc_tab[(c ^ *b++) & 0xff] ^ (c >> 8);
	return ~c;
}

#endif
