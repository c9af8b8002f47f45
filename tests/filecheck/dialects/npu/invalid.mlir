// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The npu verifiers: local invariants of a kernel (its GEMM view, tiles, the order of a
// round's GEMMs and DMAs) and of each op (tensor, tile indices, kind, dataflow).

func.func @gemm(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 3>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.swap
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:7:3: error: 'npu.kernel' op gemm says (M, K, N) = (4, 2, 3) but the expressions give (4, 2, 2)

// -----

func.func @tiles(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 4, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.swap
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:17:3: error: 'npu.kernel' op tiles [2, 4, 2] must be three sizes between 1 and (M, K, N) = (4, 2, 2)

// -----

func.func @outside(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.load "dY" <2, 0>
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:27:3: error: 'npu.kernel' op 'npu.load' of dY tile [2, 0] is outside its 2x1 tiles

// -----

func.func @gemm_first(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.gemm "dx" <0, 0, 0> dataflow "os"
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:37:3: error: 'npu.kernel' op an npu.gemm must follow an npu.swap, before the round's DMAs

// -----

func.func @gemm_after_dma(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.swap
    npu.load "dY" <0, 0>
    npu.gemm "dx" <0, 0, 0> dataflow "os"
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:47:3: error: 'npu.kernel' op an npu.gemm must follow an npu.swap, before the round's DMAs

// -----

func.func @step(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.swap
    npu.gemm "dx" <0, 1, 0> dataflow "os"
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:59:3: error: 'npu.kernel' op npu.gemm step [0, 1, 0] is outside the 2x1x1 tiles

// -----

func.func @role(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.load "dX" <0, 0>
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:71:5: error: 'npu.load' op 'dX' is not one of dY, W, X

// -----

func.func @partial(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.spill "dW" <0, 0>
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:81:5: error: 'npu.spill' op a tile of dW has 3 indices here, got 2

// -----

func.func @kind(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.swap
    npu.gemm "dz" <0, 0, 0> dataflow "os"
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:92:5: error: 'npu.gemm' op kind must be one of dx, dw, fw, got 'dz'

// -----

func.func @dataflow(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.swap
    npu.gemm "dx" <0, 0, 0> dataflow "rs"
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:103:5: error: 'npu.gemm' op dataflow must be one of os, ws, got 'rs'

// -----

func.func @parts(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.store "dW" <0, 0> {parts = 0 : i64}
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:113:5: error: 'npu.store' op parts must be positive, got 0

// -----

// A forward tile GEMM belongs to an npu.matmul, a gradient's to an npu.kernel.
func.func @fw_in_kernel(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = npu.kernel dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "interleave"} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
    npu.swap
    npu.gemm "fw" <0, 0, 0> dataflow "os"
  }
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 6]]:3: error: 'npu.kernel' op an npu.gemm of kind 'fw' in 'npu.kernel' (kinds here: dx, dw)

// -----

func.func @dx_in_matmul(%x: tensor<4x2xf32>, %w: tensor<2x2xf32>) -> tensor<4x2xf32> {
  %y = npu.matmul "Y[m,n] += X[m,k] * W[k,n]" (%x, %w) {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>} : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32> {
    npu.load "dY" <0, 0>
  }
  func.return %y : tensor<4x2xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 5]]:3: error: 'npu.matmul' op 'npu.load' of dY in 'npu.matmul' (its tensors: W, X, Y)

// -----

func.func @batched(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>) -> tensor<2x4x4xf32> {
  %y = npu.matmul "Y[h,m,n] += A[h,m,k] * B[h,k,n]" (%a, %b) {gemm = array<i64: 8, 8, 4>, tiles = array<i64: 2, 2, 2>} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32> {
    npu.swap
  }
  func.return %y : tensor<2x4x4xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 5]]:3: error: 'npu.matmul' op not a GEMM view: axes ['h'] index X, W and the output: a batched product
