// RUN: irc-opt %s -p te-autodiff | filecheck %s
// RUN: irc-opt %s -p te-autodiff --print-op-generic | irc-opt | filecheck %s

// A two-layer relu MLP with an mse loss (IGO §2.1, Eq. 1-2). Every contraction
// Y = X·W yields the pair dX = dY·Wᵀ and dW = Xᵀ·dY, both reading the same dY; the
// first layer's input is no weight, so its dX is not computed; the bias gradient sums
// dY over the batch axis. The function returns the loss, then d<weight> per weight.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    -> (tensor<f32> {irc.name = "loss"}, tensor<64x32xf32> {irc.name = "dw1"}, tensor<32xf32> {irc.name = "db1"}, tensor<32x16xf32> {irc.name = "dw2"})
// CHECK:         %[[L:.*]] = te.op "L[] += (Y[m,n] - T[m,n]) * (Y[m,n] - T[m,n]) * 0.5" (%[[Y:.*]], %t)
// CHECK-NEXT:    %[[DY:.*]] = te.op "D1[m,n] = 0.5 * (Y[m,n] - T[m,n]) + 0.5 * (Y[m,n] - T[m,n])" (%[[Y]], %t)
// CHECK-NEXT:    %[[DA:.*]] = te.op "D2[m,k] += G[m,n] * W[k,n]" (%[[DY]], %w2) : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    %[[DW2:.*]] = te.op "D3[k,n] += G[m,n] * A[m,k]" (%[[DY]], %[[A:.*]]) : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<32x16xf32>
// CHECK-NEXT:    %[[DH:.*]] = te.op "D4[m,n] = select(H[m,n] + B[n] > 0, G[m,n], 0)" (%{{.*}}, %b1, %[[DA]])
// CHECK-NEXT:    %[[DB1:.*]] = te.op "D5[n] += select(H[m,n] + B[n] > 0, G[m,n], 0)" (%{{.*}}, %b1, %[[DA]])
// CHECK-NEXT:    %[[DW1:.*]] = te.op "D6[k,n] += G[m,n] * X[m,k]" (%[[DH]], %x) : (tensor<8x32xf32>, tensor<8x64xf32>) -> tensor<64x32xf32>
// CHECK-NOT:     te.op
// CHECK:         func.return %[[L]], %[[DW1]], %[[DB1]], %[[DW2]]
func.func @main(%x: tensor<8x64xf32> {irc.name = "x"}, %w1: tensor<64x32xf32> {irc.name = "w1", irc.weight},
                %b1: tensor<32xf32> {irc.name = "b1", irc.weight}, %w2: tensor<32x16xf32> {irc.name = "w2", irc.weight},
                %t: tensor<8x16xf32> {irc.name = "t"}) -> (tensor<f32> {irc.name = "loss"}) {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %a = te.op "A[m,n] = relu(H[m,n] + B[n])" (%h, %b1) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y = te.op "Y[m,n] += A[m,k] * W[k,n]" (%a, %w2) : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %l = te.op "L[] += (Y[m,n] - T[m,n]) * (Y[m,n] - T[m,n]) * 0.5" (%y, %t) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
