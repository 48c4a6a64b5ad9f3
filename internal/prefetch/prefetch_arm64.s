#include "textflag.h"

// func Lines(p0, p1, p2, p3, p4, p5, p6, p7 uintptr)
// The eight arguments lie one after the other in the argument frame.
TEXT ·Lines(SB), NOSPLIT|NOFRAME, $0-64
	MOVD $p0+0(FP), R1
	MOVD $8, R2
loop:
	MOVD.P 8(R1), R0
	PRFM (R0), PLDL1KEEP
	SUB $1, R2
	CBNZ R2, loop
	RET
