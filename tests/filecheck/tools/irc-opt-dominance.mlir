// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics -p 'inference{device=tiny16}' | filecheck %s
// RUN: irc-opt %s --split-input-file --verify-diagnostics --disable-verify -p 'inference{device=tiny16}' | filecheck %s --check-prefix=PIPELINE

// SSA dominance is verified before anything else (issue 27): a use before its
// definition is one located error with a note at the definition, never an internal
// error of a pass or the interpreter.

func.func @te(%x: tensor<8x64xf32>, %w1: tensor<64x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %a = te.op "A[m,n] = relu(H[m,n] + B[n])" (%h, %b1) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %y = te.op "Y[m,n] += A[m,k] * W[k,n]" (%a, %w2) : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}
// CHECK:      irc-opt-dominance.mlir:10:3: error: 'te.op' op operand #0 (%h) does not dominate this use
// CHECK-NEXT: irc-opt-dominance.mlir:11:3: note: operand defined here (op in the same block)
// PIPELINE:   irc-opt-dominance.mlir:10:3: error: 'te.op' op operand #0 (%h) does not dominate this use

// -----

// at device level: the buffer is filled before it is allocated
func.func @device(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %X = device.alloc {name = "X", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.load %x into %X {origins = array<i64: 0, 0, 1, 0>} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  device.fill %Y {value = 0.000000e+00 : f64} : !device.buffer<1x4xf32>
  %Y = device.alloc {name = "Y", cores = 2 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  device.vector "Y[i,j] = Y0[i,j] + X[i,j]" %Y, (%Y, %X) {tiles = array<i64: 1, 4>, cores = 2 : i64, windows = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], kind = "elementwise", roles = {}, step = 0 : i64} : !device.buffer<1x4xf32>, (!device.buffer<1x4xf32>, !device.buffer<1x4xf32>)
  %y = device.store %Y {origins = array<i64: 0, 0, 1, 0>, group = array<i64: 0, 1>, fill = 0.000000e+00 : f64} : !device.buffer<1x4xf32> -> tensor<2x4xf32>
  device.free %X : !device.buffer<1x4xf32>
  device.free %Y : !device.buffer<1x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK:      irc-opt-dominance.mlir:25:3: error: 'device.fill' op operand #0 (%Y) does not dominate this use
// CHECK-NEXT: irc-opt-dominance.mlir:26:3: note: operand defined here (op in the same block)
// PIPELINE:   irc-opt-dominance.mlir:25:3: error: 'device.fill' op operand #0 (%Y) does not dominate this use

// -----

// an op's results are not visible inside its own regions
func.func @own(%a: index) -> index {
  %s = scf.for %i = %a to %a step %a iter_args(%acc = %a) -> (index) {
    %t = arith.addi %s, %i : index
    scf.yield %t : index
  }
  func.return %s : index
}
// CHECK:      irc-opt-dominance.mlir:42:5: error: 'arith.addi' op operand #0 (%s) does not dominate this use
// CHECK-NEXT: irc-opt-dominance.mlir:41:3: note: operand defined here (op in a parent region)
// PIPELINE:   irc-opt-dominance.mlir:42:5: error: 'arith.addi' op operand #0 (%s) does not dominate this use

// -----

// across blocks: ^bb1 does not dominate ^bb2
func.func @blocks(%c: i1, %a: i32) -> i32 {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %y = arith.addi %a, %a : i32
  cf.br ^bb3
^bb2:
  %z = arith.addi %y, %a : i32
  cf.br ^bb3
^bb3:
  func.return %a : i32
}
// CHECK:      irc-opt-dominance.mlir:60:3: error: 'arith.addi' op operand #0 (%y) does not dominate this use
// CHECK-NEXT: irc-opt-dominance.mlir:57:3: note: operand defined here (op in the same region)
// PIPELINE:   irc-opt-dominance.mlir:60:3: error: 'arith.addi' op operand #0 (%y) does not dominate this use

// -----

// dominance along the branches, a value used in a block that its definition's block
// dominates, and an unreachable block (dominated by everything, as in MLIR) verify
func.func @fine(%c: i1, %a: i32) -> i32 {
  %x = arith.addi %a, %a : i32
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %y = arith.addi %x, %a : i32
  cf.br ^bb3(%y : i32)
^bb2:
  cf.br ^bb3(%x : i32)
^bb3(%r: i32):
  func.return %r : i32
^bb4:
  %u = arith.addi %w, %a : i32
  cf.br ^bb5
^bb5:
  %w = arith.addi %x, %a : i32
  cf.br ^bb4
}
// CHECK-LABEL: func.func @fine
