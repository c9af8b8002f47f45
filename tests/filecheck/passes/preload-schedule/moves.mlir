// RUN: irc-opt %s -p 'inference{device=tiny16-hbm}' | filecheck %s
// RUN: irc-opt %s -p 'inference{device=tiny16-hbm}' | irc-run - --seed 3 | filecheck %s --check-prefix=EXEC
// RUN: irc-run %s --seed 3 | filecheck %s --check-prefix=EXEC

// An argument whose first reader only inserts unit axes (an imported model's
// Unsqueeze of its attention mask) is loaded with the movement applied on the way
// (`moves`); preloaded from HBM, it keeps them: the preload used to drop them and
// fail to verify ("cannot preload a rank-2 tensor into a rank-4 buffer").
func.func @main(%x: tensor<2x8xf32>) -> tensor<2x1x1x8xf32> {
  %u = te.op "Y[a,0,0,b] = A[a,b]" (%x) : (tensor<2x8xf32>) -> tensor<2x1x1x8xf32>
  %y = te.op "Y[a,b,c,d] = A[a,b,c,d] * 2" (%u) : (tensor<2x1x1x8xf32>) -> tensor<2x1x1x8xf32>
  func.return %y : tensor<2x1x1x8xf32>
}
// CHECK: device.preload_async %x into %{{.*}} {{{.*}}moves = [#te.expr"Y[a,0,0,b] = A[a,b]"], moved_shapes = [array<i64: 2, 1, 1, 8>]} : tensor<2x8xf32>, !device.buffer<1x1x1x1xf32>
// CHECK: device.wait

// The same values as at te level.
// EXEC: result0: tensor<2x1x1x8, float32>
// EXEC-NEXT: {{\[\[\[\[}} 4.0818 -5.1113  0.8362 -1.1355 -0.9053 -0.4312 -4.04   -0.4639]]]
