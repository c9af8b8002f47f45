// RUN: irc-opt %s -p 'igo-to-npu{device=npu-server cores=4}' | filecheck %s --check-prefix=QUAD

// Weight-sharing over the 4 cores of npu-server (M split): each core accumulates its own
// dW partial; the store sums the four.
// QUAD-LABEL: func.func @shared
// QUAD:         npu.kernel {{.*}} {partition = "weight-sharing", parts = 4 : i64, gemm = array<i64: 4096, 128, 128>, tiles = array<i64: 1024, 128, 128>, order = "dx-major"}
// QUAD:           npu.swap
// QUAD-NEXT:      npu.gemm "dx" <0, 0, 0> dataflow "os"
// QUAD-NEXT:      npu.gemm "dx" <1, 0, 0> dataflow "os" {core = 1 : i64}
// QUAD-NEXT:      npu.gemm "dx" <2, 0, 0> dataflow "os" {core = 2 : i64}
// QUAD-NEXT:      npu.gemm "dx" <3, 0, 0> dataflow "os" {core = 3 : i64}
// QUAD:           npu.swap
// QUAD-NEXT:      npu.gemm "dw" <0, 0, 0> dataflow "os"
// QUAD-NEXT:      npu.gemm "dw" <1, 0, 0> dataflow "os" {core = 1 : i64, part = 1 : i64}
// QUAD-NEXT:      npu.gemm "dw" <2, 0, 0> dataflow "os" {core = 2 : i64, part = 2 : i64}
// QUAD-NEXT:      npu.gemm "dw" <3, 0, 0> dataflow "os" {core = 3 : i64, part = 3 : i64}
// QUAD:           npu.store "dW" <0, 0> {parts = 4 : i64}
func.func @shared(%dy: tensor<4096x128xf16>, %w: tensor<128x128xf16>, %x: tensor<4096x128xf16>) -> (tensor<4096x128xf16>, tensor<128x128xf16>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) order "dx-major" {partition = "weight-sharing", parts = 4 : i64, tiles = array<i64: 1024, 128, 128>} : (tensor<4096x128xf16>, tensor<128x128xf16>, tensor<4096x128xf16>) -> (tensor<4096x128xf16>, tensor<128x128xf16>)
  func.return %dx, %dw : tensor<4096x128xf16>, tensor<128x128xf16>
}
