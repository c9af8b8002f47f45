// RUN: irc-opt %s | filecheck %s
// RUN: irc-opt %s --print-op-generic | irc-opt | filecheck %s

// Every npu op in its declarative form: a round of two cores, a spill and reload of a
// partial sum, a store summing two parts.
// CHECK-LABEL: func.func @kernel
// CHECK:         %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "dw-major"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
// CHECK-NEXT:      npu.load "dY" <0, 0>
// CHECK-NEXT:      npu.load "X" <1, 0>
// CHECK-NEXT:      npu.swap
// CHECK-NEXT:      npu.gemm "dx" <0, 0, 0> dataflow "os"
// CHECK-NEXT:      npu.gemm "dw" <1, 0, 0> dataflow "os" {core = 1 : i64, part = 1 : i64}
// CHECK-NEXT:      npu.free "X" <1, 0>
// CHECK-NEXT:      npu.spill "dW" <0, 0, 1>
// CHECK-NEXT:      npu.reload "dW" <0, 0, 1>
// CHECK-NEXT:      npu.store "dW" <0, 0> {parts = 2 : i64}
// CHECK-NEXT:    }
func.func @kernel(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "dw-major"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.load "dY" <0, 0>
    npu.load "X" <1, 0>
    npu.swap
    npu.gemm "dx" <0, 0, 0> dataflow "os"
    npu.gemm "dw" <1, 0, 0> dataflow "os" {core = 1 : i64, part = 1 : i64}
    npu.free "X" <1, 0>
    npu.spill "dW" <0, 0, 1>
    npu.reload "dW" <0, 0, 1>
    npu.store "dW" <0, 0> {parts = 2 : i64}
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}

// A convolution's pair: X read im2col, dX written col2im (M = 9, K = 18, N = 3).
// CHECK-LABEL: func.func @conv
// CHECK:         npu.kernel dx "DX[n,c,h+r,w+s] += DY[n,f,h,w] * W[f,c,r,s]" dw "DW[f,c,r,s] += DY[n,f,h,w] * X[n,c,h+r,w+s]" (%dy, %w, %x) {gemm = array<i64: 9, 18, 3>
func.func @conv(%dy: tensor<1x3x3x3xf32>, %w: tensor<3x2x3x3xf32>, %x: tensor<1x2x5x5xf32>) -> (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) {
  %dx, %dw = npu.kernel dx "DX[n,c,h+r,w+s] += DY[n,f,h,w] * W[f,c,r,s]" dw "DW[f,c,r,s] += DY[n,f,h,w] * X[n,c,h+r,w+s]" (%dy, %w, %x) {gemm = array<i64: 9, 18, 3>, tiles = array<i64: 9, 18, 3>, order = "interleave"} : (tensor<1x3x3x3xf32>, tensor<3x2x3x3xf32>, tensor<1x2x5x5xf32>) -> (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) {
    npu.swap
  }
  func.return %dx, %dw : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>
}
