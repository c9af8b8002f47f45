// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// What an rtensor.op states by itself, checked with no target: its types' factors
// form one plan, element types agree, an idle attribute is well formed. Whether the
// plan fits a chip is rtensor-check's (tests/filecheck/passes/rtensor-check).

// The types' spatial factors must be the op's F_op.
func.func @fs(%a: !rtensor.tensor<8x16xf32, fs=[2,4], ft=[1,4]>, %b: !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2> {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 2, 4, 2> : (!rtensor.tensor<8x16xf32, fs=[2,4], ft=[1,4]>, !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
  func.return %c : !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
}
// CHECK: invalid.mlir:9:3: error: 'rtensor.op' op fs of A on axis k (dimension 1) is 4, but F_op on k is 2

// -----

func.func @arity(%a: !rtensor.tensor<8x16xf32>, %b: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32> {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 1, 1> : (!rtensor.tensor<8x16xf32>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32>
  func.return %c : !rtensor.tensor<8x12xf32>
}
// CHECK: invalid.mlir:17:3: error: 'rtensor.op' op F_op has 2 entries but the expression has 3 axes (m, n, k)

// -----

func.func @extents(%a: !rtensor.tensor<8x16xf32>, %b: !rtensor.tensor<15x12xf32>) -> !rtensor.tensor<8x12xf32> {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 1, 1, 1> : (!rtensor.tensor<8x16xf32>, !rtensor.tensor<15x12xf32>) -> !rtensor.tensor<8x12xf32>
  func.return %c : !rtensor.tensor<8x12xf32>
}
// CHECK: invalid.mlir:25:3: error: 'rtensor.op' op 'C[m,n] += A[m,k] * B[k,n]': axis 'k' has extent 16 in A (dim 1) but 15 in B (dim 0)

// -----

func.func @element(%a: !rtensor.tensor<8x16xf16>, %b: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32> {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 1, 1, 1> : (!rtensor.tensor<8x16xf16>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32>
  func.return %c : !rtensor.tensor<8x12xf32>
}
// CHECK: invalid.mlir:33:3: error: 'rtensor.op' op element type mismatch: A is f16 but the result is f32

// -----

// A conv input dimension h+r needs one factor per term.
func.func @terms(%x: !rtensor.tensor<1x1x6x6xf32>, %w: !rtensor.tensor<1x1x3x3xf32>) -> !rtensor.tensor<1x1x4x4xf32> {
  %y = rtensor.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]" (%x, %w) F_op = array<i64: 1, 1, 1, 1, 1, 1, 1> : (!rtensor.tensor<1x1x6x6xf32>, !rtensor.tensor<1x1x3x3xf32>) -> !rtensor.tensor<1x1x4x4xf32>
  func.return %y : !rtensor.tensor<1x1x4x4xf32>
}
// CHECK: invalid.mlir:42:3: error: 'rtensor.op' op X dimension 2 is indexed by 'h+r' (2 term(s)) but its type gives 1 factor(s)

// -----

// An idle plan names inputs of the expression.
func.func @unknown(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> {
  %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = array<i64: 2, 8, 1> {idle = #rtensor.idle<{V = [2,1]}, bytes = 128, setup = 0>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
}
// CHECK: invalid.mlir:51:3: error: 'rtensor.op' op idle plan names 'V', which is not an input of the expression (inputs: X, W)

// -----

// One factor list per dimension.
func.func @rank(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> {
  %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = array<i64: 2, 8, 1> {idle = #rtensor.idle<{W = [2]}, bytes = 128, setup = 0>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
}
// CHECK: invalid.mlir:60:3: error: 'rtensor.op' op idle ft of W has 1 dimension(s) but W has 2

// -----

// The attribute must be an idle plan.
func.func @notidle(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> {
  %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = array<i64: 2, 8, 1> {idle = "W"} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
}
// CHECK: invalid.mlir:69:3: error: 'rtensor.op' op attribute 'idle' must be a #rtensor.idle, got "W"

// -----

func.func @relayout_shape(%a: tensor<8x16xf32>) -> !rtensor.tensor<8x12xf32> {
  %0 = rtensor.relayout %a : tensor<8x16xf32> -> !rtensor.tensor<8x12xf32>
  func.return %0 : !rtensor.tensor<8x12xf32>
}
// CHECK: invalid.mlir:77:3: error: 'rtensor.relayout' op relayout keeps the global shape, but the source is 8x16 and the result 8x12

// -----

func.func @relayout_element(%a: tensor<8x16xf32>) -> !rtensor.tensor<8x16xf16> {
  %0 = rtensor.relayout %a : tensor<8x16xf32> -> !rtensor.tensor<8x16xf16>
  func.return %0 : !rtensor.tensor<8x16xf16>
}
// CHECK: invalid.mlir:85:3: error: 'rtensor.relayout' op relayout keeps the element type, but the source has f32 and the result f16

// -----

func.func @relayout_host(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = rtensor.relayout %a : tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %0 : tensor<8x16xf32>
}
// CHECK: invalid.mlir:93:3: error: 'rtensor.relayout' op relayout between two builtin tensors moves nothing; one side must be an !rtensor.tensor

// -----

// A dimension read at a constant index is not partitioned.
func.func @constant(%a: !rtensor.tensor<2x8xf32, fs=[2,1], ft=[1,1]>) -> !rtensor.tensor<8xf32> {
  %c = rtensor.op "C[i] = A[1,i]" (%a) F_op = array<i64: 1> : (!rtensor.tensor<2x8xf32, fs=[2,1], ft=[1,1]>) -> !rtensor.tensor<8xf32>
  func.return %c : !rtensor.tensor<8xf32>
}
// CHECK: invalid.mlir:102:3: error: 'rtensor.op' op A dimension 0 is read at the index '1', which no axis partitions: fs and ft must be [1], got fs=[2] ft=[1]

// -----

// An idle plan only cuts the active partition finer: its f_t is a multiple of the active one.
func.func @idle_multiple(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,2], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[2,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> {
  %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = array<i64: 2, 8, 1> {idle = #rtensor.idle<{W = [3,1]}, bytes = 128, setup = 0>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,2], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[2,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
}
// CHECK: invalid.mlir:111:3: error: 'rtensor.op' op idle ft of W on axis k is 3, not a multiple of its active ft 2: an idle plan only cuts the active partition finer
