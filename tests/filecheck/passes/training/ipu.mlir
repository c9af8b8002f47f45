// RUN: irc-opt %s -p 'training{device=tiny16}' | filecheck %s
// RUN: irc-opt %s -p 'training{device=tiny16}' | irc-run - --report | filecheck %s --check-prefix=EXEC
// RUN: irc-opt %s -p 'training{device=tiny16 partition=dy-sharing}' --verify-diagnostics | filecheck %s --check-prefix=OPTION

// The training pipeline on an inter-core chip: te-autodiff, igo-fuse without tile
// orders, then the inference pipeline, whose rtensor-partition gives the second layer's
// pair one plan (it wins on tiny16: dY arrives once). Below the rtensor level the pair
// is one kernel computing a step of dX and of dW per step; the first layer keeps its
// lone dW. The function's planned cycles count the pair at its fused price and the
// relayouts into and out of it: the interpreted program takes exactly them.
// CHECK:         builtin.module attributes {irc.target = #irc.target<"tiny16", "t10"
// CHECK-LABEL: func.func @main
// CHECK:         device.mma {{.*}}"D2[m,k] += G[m,n] * W[k,n]"
// CHECK-NEXT:    device.mma {{.*}}"D3[k,n] += G[m,n] * X[m,k]"
// CHECK:         device.reduce %D2
// CHECK:         device.reduce %D3
// CHECK:         device.mma {{.*}}"D5[k,n] += G[m,n] * X[m,k]"
// CHECK:         func.return
// EXEC: chip time on tiny16
// EXEC: model-wide plan: 78,471 cycles predicted, 78,471 interpreted (ratio 1.0000)
// OPTION: training: tiny16 is an inter-core chip: order, partition, cores, baseline and memory are an NPU's options (its pairs are planned by rtensor-partition); leave them unset
func.func @main(%x: tensor<256x128xf32> {irc.name = "x"}, %w1: tensor<128x64xf32> {irc.name = "w1", irc.weight},
                %w2: tensor<64x32xf32> {irc.name = "w2", irc.weight}) -> (tensor<f32> {irc.name = "loss"}) {
  %h = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<256x128xf32>, tensor<128x64xf32>) -> tensor<256x64xf32>
  %g = te.op "Y[m,n] = relu(X[m,n])" (%h) : (tensor<256x64xf32>) -> tensor<256x64xf32>
  %y = te.op "Y[m,n] += X[m,k] * W[k,n]" (%g, %w2) : (tensor<256x64xf32>, tensor<64x32xf32>) -> tensor<256x32xf32>
  %l = te.op "L[] += Y[m,n] * Y[m,n] * 0.5" (%y) : (tensor<256x32xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
