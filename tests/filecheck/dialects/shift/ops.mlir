// RUN: irc-opt %s | filecheck %s
// RUN: %irc-roundtrip | filecheck %s

// An aligned compute-shift program: A (f_t=4 on k) rotates every step, B (f_t=2) every
// second step; start digits place the partitions so that they meet on every core.
// planned_cycles (written by rotation-align) is the predicted time; it round-trips.
func.func @aligned(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>, planned_cycles = 1234.5 : f64} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 4>}
    shift.ring "B" {temporal = array<i64: 1, 1, 2>}
    shift.loop "k" attributes {trips = 2 : i64, stride = 2 : i64, rotating = ["A", "B"], start = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>} {
      shift.loop "k" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["A"], start = array<i64: 0, 1, 0, 1, 0, 1, 0, 1>} {
        shift.compute
      }
    }
  }
  func.return %c : tensor<8x16xf32>
}
// CHECK-LABEL: func.func @aligned
// CHECK:      %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>, planned_cycles = 1.234500e+03 : f64} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
// CHECK-NEXT:   shift.ring "C" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:   shift.ring "A" {temporal = array<i64: 1, 1, 4>}
// CHECK-NEXT:   shift.ring "B" {temporal = array<i64: 1, 1, 2>}
// CHECK-NEXT:   shift.loop "k" attributes {trips = 2 : i64, stride = 2 : i64, rotating = ["A", "B"], start = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>} {
// CHECK-NEXT:     shift.loop "k" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["A"], start = array<i64: 0, 1, 0, 1, 0, 1, 0, 1>} {
// CHECK-NEXT:       shift.compute
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT: }

// A kernel before rotation-align states only its rings.
func.func @rings(%x: tensor<6x9xf16>) -> tensor<6xf16> attributes {irc.target = #irc.target<"tiny8", "t10", {}>} {
  %y = shift.kernel "Y[i] += X[i,j]"(%x) {grid = array<i64: 2, 3>} : (tensor<6x9xf16>) -> tensor<6xf16> {
    shift.ring "Y" {temporal = array<i64: 1, 1>}
    shift.ring "X" {temporal = array<i64: 1, 1>}
  }
  func.return %y : tensor<6xf16>
}
// CHECK-LABEL: func.func @rings
// CHECK:      shift.kernel "Y[i] += X[i,j]"(%x) {grid = array<i64: 2, 3>}
// CHECK-NEXT:   shift.ring "Y" {temporal = array<i64: 1, 1>}
// CHECK-NEXT:   shift.ring "X" {temporal = array<i64: 1, 1>}
// CHECK-NEXT: }

// A kernel of two products (a layer's gradient pair under one plan): one expression and
// one result per product, the tensors they read once each (G for both), one ring per
// tensor, and at every step one shift.compute per product, naming its output.
func.func @pair(%g: tensor<8x8xf32>, %w: tensor<8x8xf32>, %x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %dx, %dw = shift.kernel "DX[m,k] += G[m,n] * W[k,n]", "DW[k,n] += G[m,n] * X[m,k]"(%g, %w, %x) {grid = array<i64: 2, 4, 1>, planned_cycles = 9491.5 : f64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    shift.ring "DX" {temporal = array<i64: 1, 1, 1>}
    shift.ring "DW" {temporal = array<i64: 1, 1, 1>}
    shift.ring "G" {temporal = array<i64: 1, 1, 4>}
    shift.ring "W" {temporal = array<i64: 1, 1, 1>}
    shift.ring "X" {temporal = array<i64: 1, 1, 1>}
    shift.loop "n" attributes {trips = 4 : i64, stride = 1 : i64, rotating = ["G"], start = affine_map<(d0) -> ((d0 mod 4))>} {
      shift.compute "DX"
      shift.compute "DW"
    }
  }
  func.return %dx, %dw : tensor<8x8xf32>, tensor<8x8xf32>
}
// CHECK-LABEL: func.func @pair
// CHECK:      %dx, %dw = shift.kernel "DX[m,k] += G[m,n] * W[k,n]", "DW[k,n] += G[m,n] * X[m,k]"(%g, %w, %x) {grid = array<i64: 2, 4, 1>, planned_cycles = 9.491500e+03 : f64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
// CHECK-NEXT:   shift.ring "DX" {temporal = array<i64: 1, 1, 1>}
// CHECK:        shift.loop "n" attributes {trips = 4 : i64, stride = 1 : i64, rotating = ["G"], start = affine_map<(d0) -> ((d0 mod 4))>} {
// CHECK-NEXT:     shift.compute "DX"
// CHECK-NEXT:     shift.compute "DW"
// CHECK-NEXT:   }
// CHECK-NEXT: }
