// RUN: irc-opt %s | irc-opt | filecheck %s
// RUN: %irc-roundtrip | filecheck %s

// The syntax the ONNX frontend needs: comparisons yield i1, select, cast, boolean
// functions, indirect indices (Gather), row-major merged output indices (reshapes)
// and where-bound windows (slices).

// CHECK-LABEL: func.func @compare
func.func @compare(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xi1> {
  // CHECK: te.op "Y[i,j] = A[i,j] <= B[j]" (%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %y = te.op "Y[i,j] = A[i,j] <= B[j]" (%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  func.return %y : tensor<4x8xi1>
}

// ONNX Where with a NaN guard: the condition is i1, the branches f32.
// CHECK-LABEL: func.func @where
func.func @where(%c: tensor<4xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: te.op "Y[i] = select(and(C[i], not(isnan(X[i]))), X[i], -3.4028234663852886e+38)"
  %y = te.op "Y[i] = select(and(C[i], not(isnan(X[i]))), X[i], -3.4028234663852886e+38)" (%c, %x) : (tensor<4xi1>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @cast
func.func @cast(%m: tensor<2x8xi64>) -> tensor<2x8xf32> {
  // CHECK: te.op "Y[b,s] = (1 - cast(M[b,s])) * (-10000)"
  %y = te.op "Y[b,s] = (1 - cast(M[b,s])) * (-10000)" (%m) : (tensor<2x8xi64>) -> tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// An embedding lookup: the row of E is read from the integer tensor I.
// CHECK-LABEL: func.func @gather
func.func @gather(%e: tensor<100x16xf32>, %i: tensor<2x8xi64>) -> tensor<2x8x16xf32> {
  // CHECK: te.op "Y[b,s,h] = E[I[b,s],h]" (%{{.*}}, %{{.*}}) : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  %y = te.op "Y[b,s,h] = E[I[b,s],h]" (%e, %i) : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  func.return %y : tensor<2x8x16xf32>
}

// Reshape (2,3,4) -> (2,12): the merged output dim is written row-major.
// CHECK-LABEL: func.func @merge
func.func @merge(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  // CHECK: te.op "Y[i,4*j+k] = X[i,j,k]"
  %y = te.op "Y[i,4*j+k] = X[i,j,k]" (%x) : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  func.return %y : tensor<2x12xf32>
}

// Slice X[:, 0:3]: the where clause bounds the window of a larger dimension.
// CHECK-LABEL: func.func @prefix
func.func @prefix(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  // CHECK: te.op "Y[i,j] = X[i,j] where j in 3"
  %y = te.op "Y[i,j] = X[i,j] where j in 3" (%x) : (tensor<2x8xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
