// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16}' | filecheck %s

// Ops whose results nothing reads (%d, and %e, its only reader) are erased before they
// run, so the model-wide plan leaves them out: @with_dead is planned to the same cycles
// as @live, which lacks them (the interpreter then times exactly what was planned).
// CHECK-LABEL: func.func @live
// CHECK-SAME:    irc.planned_cycles = [[CYCLES:[0-9.e+]+]] : f64
// CHECK-LABEL: func.func @with_dead
// CHECK-SAME:    irc.planned_cycles = [[CYCLES]] : f64
// CHECK-NOT:     exp(
// CHECK-NOT:     "E[m,n]
// CHECK:         func.return
func.func @live(%x: tensor<8x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %a = te.op "A[m,n] = relu(H[m,n])" (%h) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = te.op "Y[m,n] += A[m,k] * W[k,n]" (%a, %w2) : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}

func.func @with_dead(%x: tensor<8x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %a = te.op "A[m,n] = relu(H[m,n])" (%h) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %d = te.op "D[m,n] = exp(H[m,n])" (%h) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = te.op "E[m,n] += D[m,k] * W[k,n]" (%d, %w2) : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %y = te.op "Y[m,n] += A[m,k] * W[k,n]" (%a, %w2) : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}
