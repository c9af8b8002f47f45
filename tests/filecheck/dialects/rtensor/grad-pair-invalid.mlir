// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The verifier reads the five types as one plan: every fs is F_op on its axes.
func.func @fs_not_f_op(%dy: !rtensor.tensor<8x8xf32, fs=[2,1]>, %w: !rtensor.tensor<8x8xf32, fs=[4,1], replicas=2>, %x: !rtensor.tensor<8x8xf32, fs=[2,2]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4]>, !rtensor.tensor<8x8xf32, fs=[4,1], replicas=2>) {
  %dx, %dw = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) F_op = array<i64: 2, 4, 1> : (!rtensor.tensor<8x8xf32, fs=[2,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], replicas=2>, !rtensor.tensor<8x8xf32, fs=[2,2]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4]>, !rtensor.tensor<8x8xf32, fs=[4,1], replicas=2>)
  func.return %dx, %dw : !rtensor.tensor<8x8xf32, fs=[2,4]>, !rtensor.tensor<8x8xf32, fs=[4,1], replicas=2>
}
// CHECK: grad-pair-invalid.mlir:5:3: error: 'rtensor.grad_pair' op fs of X on axis k (dimension 1) is 2, but F_op on k is 4

// -----

// One F_op needs one set of axes: the two gradients must range over the same axes.
func.func @other_axes(%dy: !rtensor.tensor<8x8xf32>, %w: !rtensor.tensor<8x8xf32>, %x: !rtensor.tensor<8x8xf32>) -> (!rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>) {
  %dx, %dw = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,j] += G[i,j] * X[i,k]" (%dy, %w, %x) F_op = array<i64: 1, 1, 1> : (!rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>) -> (!rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>)
  func.return %dx, %dw : !rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>
}
// CHECK: grad-pair-invalid.mlir:14:3: error: 'rtensor.grad_pair' op the gradients must range over the same axes with the same extents: dX over m=8, k=8, n=8, dW over k=8, j=8, i=8

// -----

func.func @no_shared_dy(%dy: !rtensor.tensor<8x8xf32>, %w: !rtensor.tensor<8x8xf32>, %x: !rtensor.tensor<8x8xf32>) -> (!rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>) {
  %dx, %dw = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += H[m,n] * X[m,k]" (%dy, %w, %x) F_op = array<i64: 1, 1, 1> : (!rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>) -> (!rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>)
  func.return %dx, %dw : !rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>
}
// CHECK: grad-pair-invalid.mlir:22:3: error: 'rtensor.grad_pair' op the gradients do not share dY: dX reads G, W and dW reads H, X

// -----

func.func @f_op_length(%dy: !rtensor.tensor<8x8xf32>, %w: !rtensor.tensor<8x8xf32>, %x: !rtensor.tensor<8x8xf32>) -> (!rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>) {
  %dx, %dw = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) F_op = array<i64: 1, 1> : (!rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>) -> (!rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>)
  func.return %dx, %dw : !rtensor.tensor<8x8xf32>, !rtensor.tensor<8x8xf32>
}
// CHECK: grad-pair-invalid.mlir:30:3: error: 'rtensor.grad_pair' op F_op has 2 entries but the gradients have 3 axes (m, k, n)
