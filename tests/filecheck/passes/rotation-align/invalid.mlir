// RUN: irc-opt %s -p rotation-align --split-input-file --verify-diagnostics | filecheck %s

// f_t 2 and 3 on k: neither divides the other, no pace serves both
func.func @paces(%a: tensor<6x12xf32>, %b: tensor<12x6xf32>) -> tensor<6x6xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 3, 2, 1>} : (tensor<6x12xf32>, tensor<12x6xf32>) -> tensor<6x6xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 2>}
    shift.ring "B" {temporal = array<i64: 1, 1, 3>}
  }
  func.return %c : tensor<6x6xf32>
}
// CHECK: invalid.mlir:5:3: error: 'shift.kernel' op cannot align the rotations on axis k: temporal factors must divide one another, but A has f_t=2, B has f_t=3

// -----

// prod(f_t of A) must divide the 2 cores sharing A's partition
func.func @rings(%a: tensor<6x12xf32>, %b: tensor<12x6xf32>) -> tensor<6x6xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 3, 2, 1>} : (tensor<6x12xf32>, tensor<12x6xf32>) -> tensor<6x6xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 4>}
    shift.ring "B" {temporal = array<i64: 1, 1, 1>}
  }
  func.return %c : tensor<6x6xf32>
}
// CHECK: error: 'shift.kernel' op prod(f_t of A)=4 does not divide the 2 cores sharing A's partition
