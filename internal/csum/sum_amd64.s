#include "textflag.h"

// func sumAVX2(b []byte) uint64
//
// The one's complement sum of b's little-endian words as a 64-bit partial
// sum. Blocks of 32 bytes go through AVX2 registers as four 64-bit lanes
// each: a lane x is added whole to an accumulator S (carries out of bit 63
// lost) and its high half x>>32 to an accumulator H. H is exact, and so is
// the sum of the low halves, L = S - H<<32 modulo 2^64, as long as L itself
// stays below 2^64; the true sum of the block is L + H (2^32 is 1 modulo
// 0xffff). That is 3 vector operations a lane and no carry chain between
// them. Eight accumulators (S in Y0-Y3, H in Y4-Y7) take 128 bytes an
// iteration; a lane receives at most len(b)/32 additions below 2^32, so with
// len(b) at most 2^30 (the package's chunk) every lane's L and H stay below
// 2^57 and their sum over all lanes below 2^60: exact without carries. The
// rest, under 32 bytes, goes 8, 4, 2 and 1 bytes at a time through an
// add-with-carry chain in AX, each at the offset it holds in b.
TEXT ·sumAVX2(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), CX
	XORQ AX, AX
	CMPQ CX, $32
	JB   tail

	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	CMPQ CX, $128
	JB   loop32

loop128:
	VMOVDQU 0(SI), Y8
	VMOVDQU 32(SI), Y9
	VMOVDQU 64(SI), Y10
	VMOVDQU 96(SI), Y11
	VPADDQ  Y8, Y0, Y0
	VPADDQ  Y9, Y1, Y1
	VPADDQ  Y10, Y2, Y2
	VPADDQ  Y11, Y3, Y3
	VPSRLQ  $32, Y8, Y8
	VPSRLQ  $32, Y9, Y9
	VPSRLQ  $32, Y10, Y10
	VPSRLQ  $32, Y11, Y11
	VPADDQ  Y8, Y4, Y4
	VPADDQ  Y9, Y5, Y5
	VPADDQ  Y10, Y6, Y6
	VPADDQ  Y11, Y7, Y7
	ADDQ    $128, SI
	SUBQ    $128, CX
	CMPQ    CX, $128
	JAE     loop128
	CMPQ    CX, $32
	JB      reduce

loop32:
	VMOVDQU (SI), Y8
	VPADDQ  Y8, Y0, Y0
	VPSRLQ  $32, Y8, Y8
	VPADDQ  Y8, Y4, Y4
	ADDQ    $32, SI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop32

reduce:
	// S and H of all accumulators (sums modulo 2^64 of exact values, so L
	// below comes out exact), then L + H per lane, then across lanes.
	VPADDQ       Y1, Y0, Y0
	VPADDQ       Y3, Y2, Y2
	VPADDQ       Y2, Y0, Y0
	VPADDQ       Y5, Y4, Y4
	VPADDQ       Y7, Y6, Y6
	VPADDQ       Y6, Y4, Y4
	// control:internal-csum-avx2-high-halves-kept
	VPSLLQ       $32, Y4, Y8
	VPSUBQ       Y8, Y0, Y0
	VPADDQ       Y4, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ       X1, X0, X0
	VMOVQ        X0, AX
	VPEXTRQ      $1, X0, DX
	ADDQ         DX, AX
	VZEROUPPER

tail:
	// An ADCQ $0 after an ADDQ that carried cannot carry again: the ADDQ
	// left AX at most 2^64-2.
	CMPQ CX, $8
	JB   tail4

loop8:
	// control:internal-csum-avx2-carry-dropped
	ADDQ (SI), AX
	ADCQ $0, AX
	ADDQ $8, SI
	SUBQ $8, CX
	CMPQ CX, $8
	JAE  loop8

tail4:
	TESTQ $4, CX
	JZ    tail2
	MOVL  (SI), DX
	ADDQ  DX, AX
	ADCQ  $0, AX
	ADDQ  $4, SI

tail2:
	TESTQ   $2, CX
	JZ      tail1
	MOVWQZX (SI), DX
	ADDQ    DX, AX
	ADCQ    $0, AX
	ADDQ    $2, SI

tail1:
	TESTQ   $1, CX
	JZ      done
	MOVBQZX (SI), DX
	ADDQ    DX, AX
	ADCQ    $0, AX

done:
	MOVQ AX, ret+24(FP)
	RET
