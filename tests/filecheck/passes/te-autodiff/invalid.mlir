// RUN: irc-opt %s -p te-autodiff --split-input-file --verify-diagnostics | filecheck %s

// A result that is not a scalar and no explicit output gradient.
func.func @not_scalar(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = te.op "Y[i,j] = relu(X[i,j])" (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: invalid.mlir:6:3: error: 'func.return' op the last result (tensor<2x3xf32>) is not a scalar loss and no argument carries irc.grad_of: reduce it to a rank-0 float loss (irc-translate --loss mse|xent) or pass its gradient as an argument marked irc.grad_of = 0

// -----

// A loss that depends on the argument only through a piecewise-constant function.
func.func @no_path(%x: tensor<3xf32>) -> tensor<f32> {
  %r = te.op "R[i] = floor(X[i])" (%x) : (tensor<3xf32>) -> tensor<3xf32>
  %l = te.op "L[] += R[i]" (%r) : (tensor<3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
// CHECK: invalid.mlir:15:3: error: 'te.op' op the loss has no differentiable path to any of arg0

// -----

// An op on the path with no gradient rule.
func.func @no_rule(%x: tensor<2x4xf32>) -> tensor<f32> {
  %s = te.opaque "Sort"(%x) {axis = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %l = te.op "L[] += S[i,j]" (%s) : (tensor<2x4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
// CHECK: invalid.mlir:24:3: error: 'te.opaque' op 'te.opaque' "Sort" has no gradient rule, but the loss depends on its operands

// -----

// A derivative the body does not have: mod's divisor.
func.func @mod_divisor(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<f32> {
  %r = te.op "R[i] = mod(X[i], Y[i])" (%x, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = te.op "L[] += R[i]" (%r) : (tensor<3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
// CHECK: invalid.mlir:34:3: error: 'te.op' op 'mod' has no gradient for its divisor
