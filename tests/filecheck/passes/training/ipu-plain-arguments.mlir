// RUN: irc-opt %s -p 'training{device=tiny16}' | filecheck %s
// RUN: irc-opt %s -p 'training{device=tiny16}' | irc-run - --report | filecheck %s --check-prefix=EXEC

// The training program of ipu.mlir with plain arguments (no irc.weight): every layer's
// dX/dW pair wins its own comparison (the gradients of x too), and x, w1 and w2, read by
// the forward and the backward ops, stay on chip from their first reader to their last.
// The model-wide plan counts each fused pair as one operator, its plan a point of the
// pair's frontier, so device-alloc places what it planned (it overflowed when the pairs
// were planned apart) and the interpreted program takes exactly the planned cycles.
// Fusion is decided inside that plan (issue 25, item 4): with both pairs fused it took
// 118,695 cycles, with none 114,590; with the first layer's pair (D5/D6) unfused 113,047.
// CHECK-LABEL: func.func @main
// CHECK:         device.mma {{.*}}"D2[m,k] += G[m,n] * W[k,n]"
// CHECK-NEXT:    device.mma {{.*}}"D3[k,n] += G[m,n] * X[m,k]"
// CHECK:         device.mma {{.*}}"D5[m,k] += G[m,n] * W[k,n]"
// CHECK-NOT:     device.mma {{.*}}"D6[k,n]
// CHECK:         device.shift
// CHECK:         device.mma {{.*}}"D6[k,n] += G[m,n] * X[m,k]"
// CHECK:         func.return
// EXEC: chip time on tiny16
// EXEC: peak SRAM per core: 57,344 of 65,536 bytes
// EXEC: model-wide plan: 104,201 cycles predicted, 104,201 interpreted (ratio 1.0000)
func.func @main(%x: tensor<256x128xf32> {irc.name = "x"}, %w1: tensor<128x64xf32> {irc.name = "w1"},
                %w2: tensor<64x32xf32> {irc.name = "w2"}) -> (tensor<f32> {irc.name = "loss"}) {
  %h = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<256x128xf32>, tensor<128x64xf32>) -> tensor<256x64xf32>
  %g = te.op "Y[m,n] = relu(X[m,n])" (%h) : (tensor<256x64xf32>) -> tensor<256x64xf32>
  %y = te.op "Y[m,n] += X[m,k] * W[k,n]" (%g, %w2) : (tensor<256x64xf32>, tensor<64x32xf32>) -> tensor<256x32xf32>
  %l = te.op "L[] += Y[m,n] * Y[m,n] * 0.5" (%y) : (tensor<256x32xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
