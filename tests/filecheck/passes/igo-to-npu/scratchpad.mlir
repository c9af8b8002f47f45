// RUN: irc-opt %s -p 'te-autodiff,igo-fuse{order=interleave},igo-to-npu{device="%S/Inputs/npu_crumb.toml"}' --verify-diagnostics | filecheck %s
// RUN: irc-opt %s -p 'te-autodiff,igo-fuse{order=interleave},igo-to-npu{device="%S/Inputs/npu_hand.toml"}' | filecheck %s --check-prefix=SHRUNK

// The pair igo-fuse makes carries its forward layer's location, so a scratchpad too
// small even for 1x1x1 tiles is reported at that layer, named by its forward op.
// CHECK: scratchpad.mlir:15:3: error: 'igo.grad_pair' op layer %y = "Y[m,n] += X[m,k] * W[k,n]" does not fit npu-crumb's scratchpad: one step needs 12 bytes of scratchpad but 8 are available (half of the SPM: the other half is the double buffer)

// 12 resident bytes hold three f32 tiles of 1x1: the tiles shrink below the 2x2 array
// rather than fail.
// SHRUNK: npu.kernel dx "{{.*}}" dw "{{.*}}" (%{{.*}}, %w2, %h) {gemm = array<i64: 4, 3, 2>, tiles = array<i64: 1, 1, 1>, order = "interleave"}
// SHRUNK-NEXT: npu.load
func.func @main(%x: tensor<4x5xf32> {irc.name = "x"}, %w1: tensor<5x3xf32> {irc.name = "w1", irc.weight},
                %w2: tensor<3x2xf32> {irc.name = "w2", irc.weight}) -> (tensor<f32> {irc.name = "loss"}) {
  %h = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  %y = te.op "Y[m,n] += X[m,k] * W[k,n]" (%h, %w2) : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %l = te.op "L[] += Y[m,n] * Y[m,n]" (%y) : (tensor<4x2xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
