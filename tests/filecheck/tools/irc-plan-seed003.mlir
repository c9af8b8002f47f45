// RUN: irc-plan --expr "C[m,n] += A[m,k] * B[k,n]" --shape m=32,k=5120,n=15360 --dtype f16 --device ipu-mk2 --cost seed003 | filecheck %s
// RUN: not irc-plan --expr "C[m,n] += A[m,k] * B[k,n]" --shape m=32,k=5120,n=15360 --device tiny4 2>&1 | filecheck %s --check-prefix=NOFIT

// The T10 benchmark problem (seeds/003) in its output format.
// CHECK:      operator: C[m,n] += A[m,k] * B[k,n]  (kind matmul, f16)
// CHECK:      F_op = [{{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}]
// CHECK-NEXT: f_t_A_m = {{[0-9]+}}
// CHECK-NEXT: f_t_A_k = {{[0-9]+}}
// CHECK-NEXT: f_t_B_k = {{[0-9]+}}
// CHECK-NEXT: f_t_B_n = {{[0-9]+}}
// CHECK-NEXT: f_t_C_m = {{[0-9]+}}
// CHECK-NEXT: f_t_C_n = {{[0-9]+}}
// CHECK-NEXT: padded shape: m={{[0-9]+}}, k={{[0-9]+}}, n={{[0-9]+}}  (m=32, k=5120, n=15360)
// CHECK:      predicted time: {{[0-9.]+}} us ({{[0-9]+}} cycles)
// CHECK-NEXT:   compute
// CHECK-NEXT:   shift
// CHECK-NEXT:   sync
// CHECK-NEXT:   reduction
// CHECK-NEXT: memory per core: {{[0-9]+}} B of 638976 B

// NOFIT: error: 'C[m,n] += A[m,k] * B[k,n]' cannot be placed on tiny4 under any plan: no plan fits: the least memory per core any plan needs is {{[0-9]+}} bytes, but tiny4 has 4096 bytes of SRAM per core
// NOFIT-NOT: Traceback
