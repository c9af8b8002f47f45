// RUN: irc-opt %s -p 'training{device=npu-server cores=4 order=cost partition=cost}' | filecheck %s
// RUN: irc-opt %s -p 'training{device=npu-server cores=4 order=cost partition=cost}' --print-op-generic | irc-opt | filecheck %s
// RUN: irc-opt %s -p 'training{device=npu-edge order=sequential partition=none baseline=paper}' | irc-run - --report | filecheck %s --check-prefix=REPORT
// RUN: irc-opt %s -p 'training{memory=dram}' --verify-diagnostics | filecheck %s --check-prefix=MEMORY

// The training pipeline: te-autodiff appends the backward pass, igo-fuse fuses the pair
// of the layer whose input needs a gradient (the second linear) and gives it the order
// and the 4-core partition the cost model prices lowest, igo-to-npu lowers it to the
// 4-core NPU's program; the first linear keeps its dW, which te-to-npu lowers with the
// forward GEMMs to npu.matmul programs.
// CHECK:         builtin.module attributes {irc.target = #irc.target<"npu-server", "igo", {{.*}}cores = 4 : i64
// CHECK-LABEL: func.func @main
// CHECK:         npu.matmul "Y[a0,a1,n] += X[a0,a1,k] * W[k,n]" (%x, %w1)
// CHECK:         npu.matmul "Y[a0,a1,n] += X[a0,a1,k] * W[k,n]" (%{{.*}}, %w2)
// CHECK:         npu.kernel dx "{{.*}}" dw "{{.*}}" (%{{.*}}, %w2, %{{.*}}) {partition = "{{[a-z-]+}}", parts = 4 : i64, gemm = array<i64: 64, 32, 16>, tiles = array<i64: {{[0-9, ]+}}>, order = "{{[a-z-]+}}"}
// CHECK-NEXT:      npu.load "dY" <0, 0>
// CHECK:           npu.swap
// CHECK-NEXT:      npu.gemm "d{{x|w}}" <0, 0, 0> dataflow "os"
// CHECK:           npu.store "dW" <0, 0>
// CHECK-NEXT:    }
// CHECK-NOT:     igo.grad_pair
// CHECK:         npu.matmul "{{.*}} += G[a0,a1,n] * X[a0,a1,k]"
// CHECK:         func.return

// The report puts each kernel's array cycles beside SCALE-Sim's closed form for its
// GEMMs whole: the baseline's tiles (searched for it) keep every output tile in the
// array across its reduction, so no fold is loaded twice.
// REPORT: arrays: [[A:[0-9,]+]] cycles = SCALE-Sim's [[A]] for the GEMMs whole + 0 in 0 refills
// REPORT: kernel D2/D3 {{.*}}: {{.*}} tile GEMMs; arrays [[B:[0-9,]+]] = SCALE-Sim's [[B]] + 0 in 0 refills
// MEMORY: igo-fuse: unknown memory=dram; known: irc, scalesim
func.func @main(%x: tensor<2x32x8xf32> {irc.name = "x"}, %w1: tensor<8x32xf32> {irc.name = "w1", irc.weight},
                %w2: tensor<32x16xf32> {irc.name = "w2", irc.weight}) -> (tensor<f32> {irc.name = "loss"}) {
  %h = te.op "Y[a0,a1,n] += X[a0,a1,k] * W[k,n]" (%x, %w1) : (tensor<2x32x8xf32>, tensor<8x32xf32>) -> tensor<2x32x32xf32>
  %g = te.op "Y[a0,a1,a2] = gelu(X[a0,a1,a2])" (%h) : (tensor<2x32x32xf32>) -> tensor<2x32x32xf32>
  %y = te.op "Y[a0,a1,n] += X[a0,a1,k] * W[k,n]" (%g, %w2) : (tensor<2x32x32xf32>, tensor<32x16xf32>) -> tensor<2x32x16xf32>
  %l = te.op "L[] += Y[a0,a1,a2] * Y[a0,a1,a2] * 0.5" (%y) : (tensor<2x32x16xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
