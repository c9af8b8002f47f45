// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @count(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %c : tensor<4x4xf32>
}
// CHECK: invalid.mlir:4:3: error: 'te.op' op 'C[m,n] += A[m,k] * B[k,n]': expression reads 2 tensor(s) (A, B) but the op has 1 operand(s)

// -----

func.func @extent(%a: tensor<4x8xf32>, %b: tensor<6x4xf32>) -> tensor<4x4xf32> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<4x8xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
  func.return %c : tensor<4x4xf32>
}
// CHECK: invalid.mlir:12:3: error: 'te.op' op 'C[m,n] += A[m,k] * B[k,n]': axis 'k' has extent 8 in A (dim 1) but 6 in B (dim 0)

// -----

func.func @range(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x8x8xf32> {
  %y = te.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]" (%x, %w) : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x8x8xf32>
  func.return %y : tensor<1x1x8x8xf32>
}
// CHECK: error: 'te.op' op 'Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]': index 'h+r' of X (dim 2) ranges over [0, 9] but the dimension has size 8

// -----

func.func @dtype(%a: tensor<4x4xf32>, %b: tensor<4x4xf16>) -> tensor<4x4xf32> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<4x4xf32>, tensor<4x4xf16>) -> tensor<4x4xf32>
  func.return %c : tensor<4x4xf32>
}
// CHECK: error: 'te.op' op element type mismatch: B is f16 but the result is f32

// -----

func.func @unbound(%a: tensor<8xf32>) -> tensor<4xf32> {
  %c = te.op "C[h] max= A[h+r]" (%a) : (tensor<8xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
// CHECK: error: 'te.op' op 'C[h] max= A[h+r]': the extent of axis 'r' cannot be inferred; bind it with 'where r in N'

// -----

func.func @indices(%a: tensor<4x4xf32>) -> tensor<4xf32> {
  %c = te.op "C[i] = A[i]" (%a) : (tensor<4x4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
// CHECK: error: 'te.op' op 'C[i] = A[i]': tensor 'A' is indexed with 1 indices but has rank 2
