// Exports (graphics; decode and disassembly only) for the differential test (gfx900).
.text
.globl asm_exp
.p2align 8
.type asm_exp,@function
asm_exp:
  exp mrt0 v1, v2, v3, v4 done vm
  exp pos0 v1, off, v2, off
  exp param5 v1, v1, v2, v2 compr
  exp mrtz off, off, off, off
  exp null v0, v0, v0, v0 done
  s_endpgm
