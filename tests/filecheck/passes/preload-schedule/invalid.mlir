// RUN: irc-opt %s --split-input-file -p 'inference{device=tiny16-hbm}' --verify-diagnostics | filecheck %s --check-prefix=HBM
// RUN: irc-opt %s --split-input-file -p 'inference{device=tiny16},preload-schedule' --verify-diagnostics | filecheck %s --check-prefix=NOHBM

// One operator larger than the chip's SRAM under every plan cannot run even with
// preloading: the error names the op and the bytes.
func.func @main(%x: tensor<16x4096xf32>, %w: tensor<4096x4096xf32> {irc.weight}) -> tensor<16x4096xf32> {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) : (tensor<16x4096xf32>, tensor<4096x4096xf32>) -> tensor<16x4096xf32>
  func.return %h : tensor<16x4096xf32>
}
// HBM: invalid.mlir:7:3: error: 'te.op' op "H[m,n] += X[m,k] * W[k,n]" on tiny16-hbm: no plan fits: the least memory per core any plan needs is 4243456 bytes, but tiny16-hbm has 65536 bytes of SRAM per core

// -----

// A chip without off-chip memory has nothing to preload from.
func.func @small(%x: tensor<16x16xf32>, %w: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  func.return %h : tensor<16x16xf32>
}
// NOHBM: invalid.mlir:15:1: error: preload-schedule: device 'tiny16' has no off-chip memory to preload from (its description has no [offchip] section)
