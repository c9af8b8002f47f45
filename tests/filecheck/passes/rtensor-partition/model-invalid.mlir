// RUN: irc-opt %s -p 'rtensor-partition{device="%S/Inputs/tiny16-1k.toml"}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=FIT
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p rtensor-check | filecheck %s

// Three 8 KiB weights cannot all rest on 16 cores with 1 KiB each: the error gives
// the bytes needed and available.
func.func @weights_do_not_fit(%x: tensor<8x64xf16>, %w0: tensor<64x64xf16> {irc.weight}, %w1: tensor<64x64xf16> {irc.weight}, %w2: tensor<64x64xf16> {irc.weight}) -> tensor<8x64xf16> {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w0) : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%h0, %w1) : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16>
  %h2 = te.op "H[m,n] += X[m,k] * W[k,n]" (%h1, %w2) : (tensor<8x64xf16>, tensor<64x64xf16>) -> tensor<8x64xf16>
  func.return %h2 : tensor<8x64xf16>
}
// FIT: model-invalid.mlir:6:1: error: 'func.func' op @weights_do_not_fit cannot be planned model-wide: model 'weights_do_not_fit' does not fit on tiny16-1k: its weights need 1536 bytes per core at rest even in their smallest idle plans (24576 bytes on 16 cores), but a core has 1024 bytes of SRAM (16384 bytes in all)

// -----

// The weights rest, but then an op has too little room left to execute.
func.func @active_does_not_fit(%x: tensor<32x32xf32>, %w0: tensor<32x32xf32> {irc.weight}, %w1: tensor<32x32xf32> {irc.weight}) -> tensor<32x32xf32> {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w0) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%h0, %w1) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  func.return %h1 : tensor<32x32xf32>
}
// FIT: model-invalid.mlir:17:1: error: 'func.func' op @active_does_not_fit cannot be planned model-wide: model 'active_does_not_fit' does not fit on tiny16-1k: op {{[0-9]}} (%h{{[0-9]}}) needs {{[0-9]+}} bytes per core to execute, but only {{[0-9]+}} of the 1024 bytes of SRAM are left after the other ops' idle weights ({{[0-9]+}} bytes) and resting activations ({{[0-9]+}} bytes): {{[0-9]+}} bytes needed

// -----

// The idle annotation is checked against the plan: the setup cycles are recomputed.
func.func @good(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = [2, 8, 1] {idle = #rtensor.idle<{W = [2,1]}, bytes = 128, setup = 999>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
}
// CHECK: model-invalid.mlir:28:3: error: 'rtensor.op' op idle plan says setup = 999 cycles, but gathering its slices costs 308 cycles on tiny16 under t10

// -----

// Idle bytes per core are recomputed from the idle factors.
func.func @bytes(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = [2, 8, 1] {idle = #rtensor.idle<{W = [2,1]}, bytes = 256, setup = 0>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
}
// CHECK: model-invalid.mlir:37:3: error: 'rtensor.op' op idle plan says bytes = 256, but its weights take 128 bytes per core at rest

// -----

// An idle plan names inputs of the expression.
func.func @unknown(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = [2, 8, 1] {idle = #rtensor.idle<{V = [2,1]}, bytes = 128, setup = 0>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
}
// CHECK: model-invalid.mlir:46:3: error: 'rtensor.op' op idle plan names 'V', which is not an input of the expression (inputs: X, W)

// -----

// One factor list per dimension.
func.func @rank(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = [2, 8, 1] {idle = #rtensor.idle<{W = [2]}, bytes = 128, setup = 0>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
}
// CHECK: model-invalid.mlir:55:3: error: 'rtensor.op' op idle ft of W has 1 dimension(s) but W has 2

// -----

// The attribute must be an idle plan.
func.func @notidle(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = [2, 8, 1] {idle = "W"} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
}
// CHECK: model-invalid.mlir:64:3: error: 'rtensor.op' op attribute 'idle' must be a #rtensor.idle, got "W"

// -----

// A consistent idle plan: W rests with k cut in two (each of the 2 cores sharing W's
// partition keeps half) and the setup gathers the other half.
func.func @valid(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = [2, 8, 1] {idle = #rtensor.idle<{W = [2,1]}, bytes = 128, setup = 308>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
}
// CHECK: rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = [2, 8, 1] {idle = #rtensor.idle<{W = [2,1]}, bytes = 128, setup = 308>}
