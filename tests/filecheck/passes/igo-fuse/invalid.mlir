// RUN: irc-opt %s -p 'igo-fuse{order=fastest}' --verify-diagnostics | filecheck %s --check-prefix=ORDER
// RUN: irc-opt %s -p 'igo-fuse{device=mtia-v1}' --verify-diagnostics | filecheck %s --check-prefix=FAMILY
// RUN: irc-opt %s -p 'igo-fuse{device=ipu-mk2 order=dx-major}' --verify-diagnostics | filecheck %s --check-prefix=IPU
// RUN: irc-opt %s -p 'igo-fuse{device=npu-server cores=3}' --verify-diagnostics | filecheck %s --check-prefix=CORES
// RUN: irc-opt %s -p 'igo-fuse{device="%S/Inputs/npu_tiny.toml"}' --verify-diagnostics | filecheck %s --check-prefix=SPM
// RUN: irc-opt %s -p 'igo-fuse{partition=diagonal}' --verify-diagnostics | filecheck %s --check-prefix=PART
// RUN: irc-opt %s -p 'igo-fuse{baseline=fused}' --verify-diagnostics | filecheck %s --check-prefix=BASELINE
// RUN: irc-opt %s -p 'igo-fuse{memory=dram}' --verify-diagnostics | filecheck %s --check-prefix=MEMORY
// RUN: irc-opt %s -p 'igo-fuse{device=ipu-mk2 memory=scalesim}' --verify-diagnostics | filecheck %s --check-prefix=IPU

// ORDER: igo-fuse: unknown order=fastest; known: cost, paper, sequential, interleave, dx-major, dw-major
// FAMILY: igo-fuse: device 'mtia-v1' is neither an NPU (family = "npu") nor an inter-core chip of the IPU kind
// IPU: igo-fuse: ipu-mk2 is an inter-core chip: its pairs get no tile order, scratchpad partition, core count or memory model here (rtensor-partition plans them); leave order, partition, cores and memory unset
// PART: igo-fuse: unknown partition=diagonal; known: cost, none, weight-sharing, dy-sharing, ifmap-sharing
// CORES: igo-fuse: npu-server comes with 1, 2, 4, 8 cores, not 3
// BASELINE: igo-fuse: unknown baseline=fused; known: separate, shared, paper
// MEMORY: igo-fuse: unknown memory=dram; known: irc, scalesim
// A scratchpad too small for one step's tiles names the layer and the bytes.
// SPM: invalid.mlir:21:3: error: 'te.op' op the gradients of layer %y = "Y[m,n] += X[m,k] * W[k,n]" do not fit npu-tiny's scratchpad: one step needs 12 bytes of scratchpad but 8 are available (half of the SPM: the other half is the double buffer)
func.func @main(%x: tensor<4x6xf32>, %w: tensor<6x5xf32>, %dy: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x6xf32>, tensor<6x5xf32>) {
  %y = te.op "Y[m,n] += X[m,k] * W[k,n]" (%x, %w) : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %dx = te.op "DX[m,k] += G[m,n] * W[k,n]" (%dy, %w) : (tensor<4x5xf32>, tensor<6x5xf32>) -> tensor<4x6xf32>
  %dw = te.op "DW[k,n] += G[m,n] * X[m,k]" (%dy, %x) : (tensor<4x5xf32>, tensor<4x6xf32>) -> tensor<6x5xf32>
  func.return %y, %dx, %dw : tensor<4x5xf32>, tensor<4x6xf32>, tensor<6x5xf32>
}
