// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @compare_result(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %y = te.op "Y[i] = A[i] < B[i]" (%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: onnx-syntax-invalid.mlir:4:3: error: 'te.op' op element type mismatch: '<' yields i1 but the result is f32

// -----

func.func @compare_operands(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xi1> {
  %y = te.op "Y[i] = A[i] == B[i]" (%a, %b) : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  func.return %y : tensor<4xi1>
}
// CHECK: error: 'te.op' op element type mismatch: B is i64 but the other operand of '==' is f32

// -----

func.func @float_index(%e: tensor<10x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  %y = te.op "Y[q,h] = E[I[q],h]" (%e, %i) : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}
// CHECK: error: 'te.op' op element type mismatch: index tensor I is f32 but indirect indices must be integers

// -----

func.func @select_branches(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  %y = te.op "Y[i] = select(C[i], A[i], B[i])" (%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: error: 'te.op' op element type mismatch: B is f16 but the result is f32

// -----

func.func @bad_merge(%x: tensor<2x3xf32>) -> tensor<8xf32> {
  %y = te.op "Y[4*i+j] = X[i,j]" (%x) : (tensor<2x3xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
// CHECK: error: 'te.op' op 'Y[4*i+j] = X[i,j]': output index '4*i+j' is not a row-major merge: axis 'i' has coefficient 4 where 3 is needed

// -----

func.func @window_too_small(%x: tensor<2xf32>) -> tensor<3xf32> {
  %y = te.op "Y[i] = X[i] where i in 3" (%x) : (tensor<2xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK: error: 'te.op' op 'Y[i] = X[i] where i in 3': X[...] reads axis 'i' over [0, 2] (the where clause) past the end of X (dim 0), which has size 2

// -----

func.func @isnan_int(%x: tensor<4xi64>) -> tensor<4xi1> {
  %y = te.op "Y[i] = isnan(X[i])" (%x) : (tensor<4xi64>) -> tensor<4xi1>
  func.return %y : tensor<4xi1>
}
// CHECK: error: 'te.op' op element type mismatch: 'isnan' takes a float but its operand is i64
