// RUN: irc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

func.func @f(%x: tensor<4xf32>, %i: tensor<4xi64>) -> tensor<4xf32> {
  %y = te.op "Y[I[i]] = X[i]" (%x, %i) : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: output index 'I[i]' reads a tensor; output indices must be affine

// -----

func.func @f(%x: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  %y = te.op "Y[i] = select(X[i], B[i])" (%x, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: function 'select' takes 3 argument(s), got 2
