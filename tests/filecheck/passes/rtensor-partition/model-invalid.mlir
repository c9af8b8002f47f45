// RUN: irc-opt %s -p 'rtensor-partition{device="%S/Inputs/tiny16-1152.toml"}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=FIT

// Three 8 KiB weights cannot all rest on 16 cores with 1152 bytes each: the error gives
// the bytes needed and available.
func.func @weights_do_not_fit(%x: tensor<8x64xf16>, %w0: tensor<64x64xf16> {irc.weight}, %w1: tensor<64x64xf16> {irc.weight}, %w2: tensor<64x64xf16> {irc.weight}) -> tensor<8x64xf16> {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w0) : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%h0, %w1) : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16>
  %h2 = te.op "H[m,n] += X[m,k] * W[k,n]" (%h1, %w2) : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16>
  func.return %h2 : tensor<8x64xf16>
}
// FIT: model-invalid.mlir:5:1: error: 'func.func' op @weights_do_not_fit cannot be planned model-wide: model 'weights_do_not_fit' does not fit on tiny16-1152: its weights need 1536 bytes per core at rest even in their smallest idle plans (24576 bytes on 16 cores), but a core has 1152 bytes of SRAM (18432 bytes in all)

// -----

// The weights rest, but then an op has too little room left to execute.
func.func @active_does_not_fit(%x: tensor<32x32xf32>, %w0: tensor<32x32xf32> {irc.weight}, %w1: tensor<32x32xf32> {irc.weight}) -> tensor<32x32xf32> {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w0) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%h0, %w1) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  func.return %h1 : tensor<32x32xf32>
}
// FIT: model-invalid.mlir:16:1: error: 'func.func' op @active_does_not_fit cannot be planned model-wide: model 'active_does_not_fit' does not fit on tiny16-1152: op {{[0-9]}} (%h{{[0-9]}}) needs {{[0-9]+}} bytes per core to execute, but only {{[0-9]+}} of the 1152 bytes of SRAM are left after the idle weights ({{[0-9]+}} bytes, its own included) and the tensors kept on chip across it ({{[0-9]+}} bytes): {{[0-9]+}} bytes needed

// An idle plan written into rtensor IR is checked by rtensor-check
// (tests/filecheck/passes/rtensor-check) and the rtensor verifier (dialects/rtensor).
