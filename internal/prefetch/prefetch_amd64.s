#include "textflag.h"

// func Lines(p0, p1, p2, p3, p4, p5, p6, p7 uintptr)
// The eight arguments lie one after the other in the argument frame.
TEXT ·Lines(SB), NOSPLIT|NOFRAME, $0-64
	LEAQ p0+0(FP), SI
	MOVQ $8, CX
loop:
	MOVQ (SI), AX
	PREFETCHT0 (AX)
	ADDQ $8, SI
	DECQ CX
	JNZ loop
	RET
