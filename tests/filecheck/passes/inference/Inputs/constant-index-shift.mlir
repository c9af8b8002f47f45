// rtensor-partition{mode=op} + rtensor-to-shift output of ../constant-index.mlir on tiny16, with
// two plan choices edited for coverage: A and B of the MatMul rotate along k (f_t 2), and
// the reshape keeps o2 whole while splitting o3 over 4 cores (A partition: 8*(2-1)+2 = 10).
func.func @main(%a: tensor<2x8x12xf32>, %b: tensor<12x16xf32>, %bias: tensor<1x1x16xf32>) -> tensor<1x8x2x8xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %y = shift.kernel "Y[b0,m,n] += A[1,m,k] * B[k,n]"(%a, %b) {grid = array<i64: 1, 2, 4, 2>} : (tensor<2x8x12xf32>, tensor<12x16xf32>) -> tensor<1x8x16xf32> {
    shift.ring "Y" {temporal = array<i64: 1, 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 1, 2>}
    shift.ring "B" {temporal = array<i64: 1, 1, 1, 2>}
  }
  %z = shift.kernel "Y[d0,d1,d2] = A[0,d1,d2] + B[0,0,d2]"(%y, %bias) {grid = array<i64: 1, 1, 16>} : (tensor<1x8x16xf32>, tensor<1x1x16xf32>) -> tensor<1x8x16xf32> {
    shift.ring "Y" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 1>}
    shift.ring "B" {temporal = array<i64: 1, 1, 1>}
  }
  %r = shift.kernel "Y[0,o1,o2,o3] = A[0,o1,8*o2+o3]"(%z) {grid = array<i64: 2, 1, 4>} : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32> {
    shift.ring "Y" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 1>}
  }
  func.return %r : tensor<1x8x2x8xf32>
}
