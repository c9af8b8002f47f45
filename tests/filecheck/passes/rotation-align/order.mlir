// RUN: irc-opt %s -p rotation-align | filecheck %s

// Two rotating axes: B rotates along k (ring over m) and C along m (ring over k). T10
// s4.4: the bigger tensor's shift is the outer loop, the smaller one's the inner loop.
func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 2>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 2, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 1>}
    shift.ring "B" {temporal = array<i64: 1, 1, 2>}
  }
  func.return %c : tensor<8x16xf32>
}
// B's partition (3x4 = 12 elements) is bigger than C's (2x4 = 8): k outside, m inside
// CHECK:      shift.loop "k" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["B"], start = affine_map<(d0) -> (((d0 floordiv 8) mod 2))>} {
// CHECK-NEXT:   shift.loop "m" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["C"], start = affine_map<(d0) -> ((d0 mod 2))>} {
// CHECK-NEXT:     shift.compute
