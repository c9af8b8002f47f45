// RUN: irc-opt %s -p 'inference{device=npu-edge}' | filecheck %s
// RUN: irc-opt %s -p 'te-to-npu{device=npu-edge}' --print-op-generic | irc-opt | filecheck %s
// RUN: irc-opt %s -p 'te-to-npu{device=npu-edge cores=2}' --verify-diagnostics | filecheck %s --check-prefix=CORES
// RUN: irc-opt %s -p 'te-to-npu{policy=fifo}' --verify-diagnostics | filecheck %s --check-prefix=POLICY
// RUN: irc-opt %s -p 'inference{device=npu-edge cost=t10}' --verify-diagnostics | filecheck %s --check-prefix=COST
// RUN: irc-opt %s -p 'inference{device=npu-server cores=4}' | filecheck %s --check-prefix=FOUR
// RUN: irc-opt %s -p 'inference{device=npu-server cores=3}' --verify-diagnostics | filecheck %s --check-prefix=THREE
// RUN: irc-opt %s -p 'inference{device=ipu-mk2 cores=2}' --verify-diagnostics | filecheck %s --check-prefix=IPU

// A forward GEMM becomes an npu.matmul (tiles searched for the forward order: 100 is
// three 45-row tiles of K); the elementwise op stays te, run by the host.
// CHECK: builtin.module attributes {irc.target = #irc.target<"npu-edge", "igo", {{.*}}family = "npu"{{.*}}}>}
// CHECK: %h = npu.matmul "H[m,n] += X[m,k] * W[k,n]" (%x, %w) {gemm = array<i64: 8, 100, 16>, tiles = array<i64: 8, [[TK:[0-9]+]], 16>}
// CHECK-NEXT: npu.load "X" <0, 0>
// CHECK-NEXT: npu.load "W" <0, 0>
// CHECK-NEXT: npu.swap
// CHECK-NEXT: npu.gemm "fw" <0, 0, 0> dataflow "os"
// CHECK: npu.store "Y" <0, 0>
// CHECK: te.op "A[m,n] = relu(H[m,n])"
// CORES: te-to-npu: npu-edge comes with 1 cores, not 2
// POLICY: te-to-npu: unknown policy=fifo; known: lru, belady
// inference{cores=N} splits the forward GEMMs over N of the NPU's cores (te-to-npu's option).
// FOUR: irc.target = #irc.target<"npu-server", "igo", {{.*}}cores = 4 : i64
// FOUR: npu.matmul "H[m,n] += X[m,k] * W[k,n]"
// THREE: te-to-npu: npu-server comes with 1, 2, 4, 8 cores, not 3
// IPU: inference: cores is an NPU's option (te-to-npu's); an inter-core chip has its device file's cores
// COST: inference: npu-edge is an NPU, priced by the igo model: cost (other than igo), preload, split and min_utilization are the inter-core pipeline's options; leave them unset
func.func @main(%x: tensor<8x100xf32>, %w: tensor<100x16xf32>) -> tensor<8x16xf32> {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) : (tensor<8x100xf32>, tensor<100x16xf32>) -> tensor<8x16xf32>
  %a = te.op "A[m,n] = relu(H[m,n])" (%h) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  func.return %a : tensor<8x16xf32>
}
