// RUN: irc-opt %s | irc-opt | filecheck %s
// RUN: %irc-roundtrip | filecheck %s

// The seed 003 problem: a 32x5120x15360 f16 matmul.
// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<32x5120xf16>, %b: tensor<5120x15360xf16>) -> tensor<32x15360xf16> {
  // CHECK: %{{.*}} = te.op "C[m,n] += A[m,k] * B[k,n]" (%{{.*}}, %{{.*}}) : (tensor<32x5120xf16>, tensor<5120x15360xf16>) -> tensor<32x15360xf16>
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<32x5120xf16>, tensor<5120x15360xf16>) -> tensor<32x15360xf16>
  func.return %c : tensor<32x15360xf16>
}

// CHECK-LABEL: func.func @batched
func.func @batched(%q: tensor<8x128x64xf32>, %k: tensor<8x64x128xf32>) -> tensor<8x128x128xf32> {
  // CHECK: te.op "S[b,i,j] += Q[b,i,d] * K[b,d,j] * 0.125"
  %s = te.op "S[b,i,j] += Q[b,i,d] * K[b,d,j] * 0.125" (%q, %k) : (tensor<8x128x64xf32>, tensor<8x64x128xf32>) -> tensor<8x128x128xf32>
  func.return %s : tensor<8x128x128xf32>
}

// Compound (affine) indices: a stride-2 convolution.
// CHECK-LABEL: func.func @conv
func.func @conv(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  // CHECK: te.op "Y[n,f,h,w] += X[n,c,2*h+r,2*w+s] * W[f,c,r,s]"
  %y = te.op "Y[n,f,h,w] += X[n,c,2*h+r,2*w+s] * W[f,c,r,s]" (%x, %w) : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}

// Padding is an output write at a shifted index; unwritten elements are zero.
// CHECK-LABEL: func.func @pad
func.func @pad(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x10x10xf32> {
  // CHECK: te.op "P[n,c,h+1,w+1] = X[n,c,h,w]"
  %p = te.op "P[n,c,h+1,w+1] = X[n,c,h,w]" (%x) : (tensor<1x3x8x8xf32>) -> tensor<1x3x10x10xf32>
  func.return %p : tensor<1x3x10x10xf32>
}

// Max pooling: the window axis is bound only by the where clause.
// CHECK-LABEL: func.func @pool
func.func @pool(%x: tensor<16xf32>) -> tensor<7xf32> {
  // CHECK: te.op "Y[h] max= X[2*h+r] where r in 3"
  %y = te.op "Y[h] max= X[2*h+r] where r in 3" (%x) : (tensor<16xf32>) -> tensor<7xf32>
  func.return %y : tensor<7xf32>
}

// Elementwise bodies with functions, constants, and broadcasting by index.
// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<4x8xf16>, %b: tensor<8xf16>) -> (tensor<4x8xf16>, tensor<4xf16>) {
  // CHECK: te.op "Y[i,j] = gelu(X[i,j] + B[j]) * 0.5 - sigmoid(X[i,j]) / (1 + exp(neg(X[i,j])))"
  %y = te.op "Y[i,j] = gelu(X[i,j] + B[j]) * 0.5 - sigmoid(X[i,j]) / (1 + exp(neg(X[i,j])))" (%x, %b) : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
  // CHECK: te.op "S[i] += X[i,j] * X[i,j]" (%{{.*}}) {note = "sum of squares"}
  %s = te.op "S[i] += X[i,j] * X[i,j]" (%x) {note = "sum of squares"} : (tensor<4x8xf16>) -> tensor<4xf16>
  func.return %y, %s : tensor<4x8xf16>, tensor<4xf16>
}

// Rank-0 results and the other combiners.
// CHECK-LABEL: func.func @scalars
func.func @scalars(%x: tensor<5x6xf32>) -> (tensor<f32>, tensor<5xf32>) {
  // CHECK: te.op "T[] += X[i,j]"
  %t = te.op "T[] += X[i,j]" (%x) : (tensor<5x6xf32>) -> tensor<f32>
  // CHECK: te.op "M[i] min= rsqrt(X[i,j])"
  %m = te.op "M[i] min= rsqrt(X[i,j])" (%x) : (tensor<5x6xf32>) -> tensor<5xf32>
  func.return %t, %m : tensor<f32>, tensor<5xf32>
}

// Operators no expression can state keep their source name and attributes.
// CHECK-LABEL: func.func @opaque
func.func @opaque(%x: tensor<4x10xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>) {
  // CHECK: %{{.*}}, %{{.*}} = te.opaque "TopK"(%{{.*}}) {axis = -1 : i64, k = 3 : i64} : (tensor<4x10xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
  %v, %i = te.opaque "TopK" (%x) {axis = -1 : i64, k = 3 : i64} : (tensor<4x10xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
  func.return %v, %i : tensor<4x3xf32>, tensor<4x3xi64>
}
