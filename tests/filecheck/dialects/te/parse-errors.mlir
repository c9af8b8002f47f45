// RUN: irc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = te.op "C[i] = foo(A[i])" (%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
// CHECK: unknown function 'foo' (known: abs, and, cast, ceil, erf, exp, floor, fmod, gelu, isinf, isnan, log, max, min, mod, neg, not, or, pow, relu, round, rsqrt, select, sigmoid, sign, sqrt, tanh, xor)

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = te.op "C[i] = A[i" (%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
// CHECK: malformed tensor expression: unexpected end of expression

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = te.op "C[i] = relu(A[i], A[i])" (%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
// CHECK: function 'relu' takes 1 argument(s), got 2

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = te.op "C[i] = A[i]" (%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  func.return %c : tensor<4xf32>
}
// CHECK: parse-errors.mlir:{{[0-9]+}}:68: error: Expected ')'

// -----

func.func @reduction(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = te.op "C[i] += A[i]" (%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
// CHECK: parse-errors.mlir:{{[0-9]+}}:14: error: combiner '+=' folds over reduction axes but the expression has none; use '='

// -----

func.func @rank(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = te.op "C[i] = A[i,j] where j in 2" (%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
// CHECK: error: combiner '=' cannot fold reduction axes (j); use '+=', 'max=' or 'min='
