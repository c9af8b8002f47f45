// RUN: irc-opt %s -p 'igo-to-npu{device="%S/Inputs/npu_crumb.toml"}' --verify-diagnostics | filecheck %s --check-prefix=SPM
// RUN: irc-opt %s -p 'igo-to-npu{device=ipu-mk2}' --verify-diagnostics | filecheck %s --check-prefix=FAMILY
// RUN: irc-opt %s -p 'igo-to-npu{device=npu-edge cores=2}' --verify-diagnostics | filecheck %s --check-prefix=CORES
// RUN: irc-opt %s -p 'igo-to-npu{policy=fifo}' --verify-diagnostics | filecheck %s --check-prefix=POLICY
// RUN: irc-opt %s -p 'igo-to-npu{device=""}' --verify-diagnostics | filecheck %s --check-prefix=TARGET
// RUN: irc-opt %s -p 'igo-to-npu{baseline=fused}' --verify-diagnostics | filecheck %s --check-prefix=BASELINE

// A scratchpad too small even for 1x1x1 tiles names the layer and the bytes (a pair
// written by hand, with no forward op to name: its gradients; scratchpad.mlir has one).
// SPM: invalid.mlir:17:3: error: 'igo.grad_pair' op layer with gradients 'DX/DW' does not fit npu-crumb's scratchpad: one step needs 12 bytes of scratchpad but 8 are available (half of the SPM: the other half is the double buffer)
// FAMILY: igo-to-npu: device 'ipu-mk2' is not an NPU (family = "npu")
// CORES: igo-to-npu: npu-edge comes with 1 cores, not 2
// POLICY: igo-to-npu: unknown policy=fifo; known: lru, belady
// TARGET: igo-to-npu: the module has no irc.target; name the NPU: igo-to-npu{device=...}
// BASELINE: igo-to-npu: unknown baseline=fused; known: separate, shared, paper
func.func @main(%dy: tensor<4x2xf32>, %w: tensor<2x2xf32>, %x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) order "interleave" : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<2x2xf32>)
  func.return %dx, %dw : tensor<4x2xf32>, tensor<2x2xf32>
}
