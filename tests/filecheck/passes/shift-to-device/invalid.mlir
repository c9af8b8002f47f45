// RUN: irc-opt %s -p shift-to-device --split-input-file --verify-diagnostics | filecheck %s

// a rotating kernel needs its loops first
func.func @unaligned(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 4>}
    shift.ring "B" {temporal = array<i64: 1, 1, 2>}
  }
  func.return %c : tensor<8x16xf32>
}
// CHECK: invalid.mlir:5:3: error: 'shift.kernel' op the kernel rotates tensors but has no shift.loop; run rotation-align

// -----

// a sum of a non-product body whose plan pads its reduction axis (7 -> 8) cannot be
// computed exactly: exp(0) of a padded point is 1, not 0 (max= is clamped instead)
func.func @padded(%x: tensor<4x7xf32>) -> tensor<4xf32> attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %y = shift.kernel "Y[i] += exp(X[i,j])"(%x) {grid = array<i64: 1, 4>} : (tensor<4x7xf32>) -> tensor<4xf32> {
    shift.ring "Y" {temporal = array<i64: 1, 1>}
    shift.ring "X" {temporal = array<i64: 1, 1>}
  }
  func.return %y : tensor<4xf32>
}
// CHECK: error: 'shift.kernel' op the plan pads reduction axis j from 7 to 8, and the padded points would change the fold (+= over j); choose F_op and f_t whose product on j divides 7
