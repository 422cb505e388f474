#include "textflag.h"

// Each loop reads 32 bytes at a time, marks the bytes its word loop in
// asciiscan.go stops at, and returns the first one's offset, or the
// length rounded down to 32 when the whole blocks hold none. Only VEX
// instructions touch the vector registers (VMOVQ, not MOVQ): a legacy
// SSE one beside 256-bit state stalled each call, making a sync 2.7
// times slower.

// func jsonStringAVX2(b []byte) int
// Stops at a byte below 0x20 or above 0x7F (below 0x20 as a signed
// byte), '"' or '\\'.
TEXT ·jsonStringAVX2(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), CX
	ANDQ $~31, CX
	XORQ AX, AX
	MOVQ $0x20, DX
	VMOVQ DX, X1
	VPBROADCASTB X1, Y1
	MOVQ $0x22, DX
	VMOVQ DX, X2
	VPBROADCASTB X2, Y2
	MOVQ $0x5c, DX
	VMOVQ DX, X3
	VPBROADCASTB X3, Y3

jsonLoop:
	CMPQ AX, CX
	JAE  jsonDone
	VMOVDQU  (SI)(AX*1), Y0
	VPCMPGTB Y0, Y1, Y4
	VPCMPEQB Y0, Y2, Y5
	VPOR     Y5, Y4, Y4
	VPCMPEQB Y0, Y3, Y5
	VPOR     Y5, Y4, Y4
	VPMOVMSKB Y4, DX
	TESTL    DX, DX
	JNZ      jsonFound
	ADDQ     $32, AX
	JMP      jsonLoop

jsonFound:
	BSFL DX, DX
	ADDQ DX, AX

jsonDone:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

// func printableLinesAVX2(b []byte) int
// Stops at a byte below 0x20 or above 0x7F (below 0x20 as a signed
// byte) but '\n', or 0x7F.
TEXT ·printableLinesAVX2(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), CX
	ANDQ $~31, CX
	XORQ AX, AX
	MOVQ $0x20, DX
	VMOVQ DX, X1
	VPBROADCASTB X1, Y1
	MOVQ $0x0a, DX
	VMOVQ DX, X2
	VPBROADCASTB X2, Y2
	MOVQ $0x7f, DX
	VMOVQ DX, X3
	VPBROADCASTB X3, Y3

printLoop:
	CMPQ AX, CX
	JAE  printDone
	VMOVDQU  (SI)(AX*1), Y0
	VPCMPGTB Y0, Y1, Y4
	VPCMPEQB Y0, Y2, Y5
	VPANDN   Y4, Y5, Y4
	VPCMPEQB Y0, Y3, Y5
	VPOR     Y5, Y4, Y4
	VPMOVMSKB Y4, DX
	TESTL    DX, DX
	JNZ      printFound
	ADDQ     $32, AX
	JMP      printLoop

printFound:
	BSFL DX, DX
	ADDQ DX, AX

printDone:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

// func indexAny3AVX2(b []byte, x, y, z byte) int
// Stops at x, y or z.
TEXT ·indexAny3AVX2(SB), NOSPLIT, $0-40
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), CX
	ANDQ $~31, CX
	XORQ AX, AX
	MOVBQZX x+24(FP), DX
	VMOVQ DX, X1
	VPBROADCASTB X1, Y1
	MOVBQZX y+25(FP), DX
	VMOVQ DX, X2
	VPBROADCASTB X2, Y2
	MOVBQZX z+26(FP), DX
	VMOVQ DX, X3
	VPBROADCASTB X3, Y3

anyLoop:
	CMPQ AX, CX
	JAE  anyDone
	VMOVDQU  (SI)(AX*1), Y0
	VPCMPEQB Y0, Y1, Y4
	VPCMPEQB Y0, Y2, Y5
	VPOR     Y5, Y4, Y4
	VPCMPEQB Y0, Y3, Y5
	VPOR     Y5, Y4, Y4
	VPMOVMSKB Y4, DX
	TESTL    DX, DX
	JNZ      anyFound
	ADDQ     $32, AX
	JMP      anyLoop

anyFound:
	BSFL DX, DX
	ADDQ DX, AX

anyDone:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET
