// RUN: irc-opt %s -p 'inference{device=mtia-v1}' | filecheck %s
// RUN: irc-opt %s -p 'inference{device=mtia-v1}' | irc-run - --seed 1 --report | filecheck %s --check-prefix=EXEC
// RUN: irc-run %s --seed 1 | filecheck %s --check-prefix=TE
// RUN: irc-opt %s -p 'inference{device=mtia-v1 preload=dyn}' --verify-diagnostics --split-input-file | filecheck %s --check-prefix=OPTION

// The inference pipeline is the device family's: on MTIA it is mtia-partition (each op
// a section-4 mapping, a T10 rotation plan or a SIMD stream) and te-to-mtia. The program
// computes te's numbers, and its interpreted time is the planned one.
func.func @main(%x: tensor<16x8xf32>, %w: tensor<8x8xf32> {irc.weight}) -> tensor<16x8xf32> {
  %h = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w) : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %g = te.op "Y[m,n] = relu(X[m,n])" (%h) : (tensor<16x8xf32>) -> tensor<16x8xf32>
  func.return %g : tensor<16x8xf32>
}
// CHECK:     builtin.module attributes {irc.target = #irc.target<"mtia-v1", "mtia",
// CHECK:     func.func @main({{.*}} attributes {irc.planned_cycles = {{.*}} : f64} {
// CHECK:       mtia.step
// CHECK:       mtia.simd
// CHECK:       func.return
// CHECK-NOT:   te.op

// EXEC:      chip time on mtia-v1 (MTIA):
// EXEC:      model-wide plan: [[CYCLES:[0-9,]+]] cycles predicted, [[CYCLES]] interpreted (ratio 1.0000)
// EXEC-NEXT: result0: tensor<16x8, float32>
// EXEC-NEXT: {{\[\[}}2.3621 0.     0.     ... 1.3914 4.2303 0.    ]
// EXEC-NEXT:  [0.     0.     0.     ... 0.0906 0.     0.    ]

// TE:      result0: tensor<16x8, float32>
// TE-NEXT: {{\[\[}}2.3621 0.     0.     ... 1.3914 4.2303 0.    ]
// TE-NEXT:  [0.     0.     0.     ... 0.0906 0.     0.    ]

// OPTION: inference: mtia-v1 is of the mtia family, priced by the mtia model: cost (other than mtia), preload, split and min_utilization are the inter-core pipeline's options; leave them unset
