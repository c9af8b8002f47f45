// RUN: irc-opt %s -p 'igo-fuse{device=ipu-mk2}' | filecheck %s
// RUN: irc-opt %s -p 'igo-fuse{device=ipu-mk2}' --print-op-generic | irc-opt | filecheck %s
// RUN: irc-opt %s -p 'igo-fuse{device=ipu-mk2},igo-to-npu{device=npu-edge}' --verify-diagnostics | filecheck %s --check-prefix=NPU

// On an inter-core chip a pair is fused without a tile order or a partition:
// rtensor-partition gives it a compute-shift plan (rtensor.grad_pair). The pair keeps
// its forward layer's location.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %{{.*}} = te.op "Y[m,n] += X[m,k] * W[k,n]"
// CHECK-NEXT:    %{{.*}}, %{{.*}} = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) {irc.gemm = "M=4 K=6 N=5"} : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>)
// NPU: ipu.mlir:13:3: error: 'igo.grad_pair' op has no tile order (igo-fuse fused it for an inter-core chip); run igo-fuse{device=npu-edge} for an NPU
func.func @main(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>, %dy: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x6xf32>, tensor<6x5xf32>) {
  %y = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w) : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %dx = te.op "DX[m,k] += G[m,n] * W[k,n]" (%dy, %w) : (tensor<4x5xf32>, tensor<6x5xf32>) -> tensor<4x6xf32>
  %dw = te.op "DW[k,n] += G[m,n] * X[m,k]" (%dy, %x) : (tensor<4x5xf32>, tensor<4x6xf32>) -> tensor<6x5xf32>
  func.return %y, %dx, %dw : tensor<4x5xf32>, tensor<4x6xf32>, tensor<6x5xf32>
}
