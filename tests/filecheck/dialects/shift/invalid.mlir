// RUN: irc-opt %s --split-input-file --verify-diagnostics -p rotation-align | filecheck %s

// The verifier checks what a kernel states by itself (grid, rings, loop structure);
// whether its loops are the aligned schedule of its rings depends on the plan's step
// tiles on the target, which rotation-align checks (the pace and placement cases).

func.func @grid(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 1>}
    shift.ring "B" {temporal = array<i64: 1, 1, 1>}
  }
  func.return %c : tensor<8x16xf32>
}
// CHECK: invalid.mlir:8:3: error: 'shift.kernel' op grid has 2 factors but 'C[m,n] += A[m,k] * B[k,n]' has 3 axes (m, n, k)

// -----

func.func @missing(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 1>}
  }
  func.return %c : tensor<8x16xf32>
}
// CHECK: error: 'shift.kernel' op no shift.ring for tensor B

// -----

// a loop whose pace does not match the rings (B has f_t=2, not 4)
func.func @pace(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 4>}
    shift.ring "B" {temporal = array<i64: 1, 1, 2>}
    shift.loop "k" attributes {trips = 4 : i64, stride = 1 : i64, rotating = ["A", "B"], start = array<i64: 0>} {
      shift.compute
    }
  }
  func.return %c : tensor<8x16xf32>
}
// CHECK: error: 'shift.kernel' op the loops (axis k trips 4 rotating A, B) do not match the rings' paces; expected levels: axis k trips 2 rotating A; axis k trips 2 rotating A, B

// -----

// start digits that put the same partition of A on two cores of one ring
func.func @placement(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 4>}
    shift.ring "B" {temporal = array<i64: 1, 1, 2>}
    shift.loop "k" attributes {trips = 2 : i64, stride = 2 : i64, rotating = ["A", "B"], start = array<i64: 0>} {
      shift.loop "k" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["A"], start = array<i64: 0>} {
        shift.compute
      }
    }
  }
  func.return %c : tensor<8x16xf32>
}
// CHECK: error: 'shift.kernel' op the loops' start digits do not align the rings: cannot align the rotations of A (f_t=[1, 1, 4] on ['m', 'n', 'k']): two cores of one ring would hold the same partition

// -----

func.func @trips(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 2>}
    shift.ring "B" {temporal = array<i64: 1, 1, 1>}
    shift.loop "k" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["A"], start = array<i64: 0, 1, 0, 1, 0, 1, 0, 7>} {
      shift.compute
    }
  }
  func.return %c : tensor<8x16xf32>
}
// CHECK: error: 'shift.loop' op start digits of the loop on axis k must lie in [0, 2), got 7

// -----

// A kernel of several products: each product's shift.compute names its output
func.func @unnamed(%g: tensor<8x8xf32>, %w: tensor<8x8xf32>, %x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %dx, %dw = shift.kernel "DX[m,k] += G[m,n] * W[k,n]", "DW[k,n] += G[m,n] * X[m,k]"(%g, %w, %x) {grid = array<i64: 2, 4, 1>} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    shift.ring "DX" {temporal = array<i64: 1, 1, 1>}
    shift.ring "DW" {temporal = array<i64: 1, 1, 1>}
    shift.ring "G" {temporal = array<i64: 1, 1, 1>}
    shift.ring "W" {temporal = array<i64: 1, 1, 1>}
    shift.ring "X" {temporal = array<i64: 1, 1, 1>}
    shift.compute "DX"
    shift.compute
  }
  func.return %dx, %dw : tensor<8x8xf32>, tensor<8x8xf32>
}
// CHECK: error: 'shift.kernel' op the innermost level holds one shift.compute per product, in order and naming its output (DX, DW), got DX, (unnamed)

// -----

// the products of a kernel range over one iteration space
func.func @axes(%g: tensor<8x8xf32>, %w: tensor<8x8xf32>, %x: tensor<8x4xf32>) -> (tensor<8x8xf32>, tensor<4x8xf32>) attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %dx, %dw = shift.kernel "DX[m,k] += G[m,n] * W[k,n]", "DW[k,n] += G[m,n] * X[m,k]"(%g, %w, %x) {grid = array<i64: 2, 4, 1>} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x4xf32>) -> (tensor<8x8xf32>, tensor<4x8xf32>) {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
  }
  func.return %dx, %dw : tensor<8x8xf32>, tensor<4x8xf32>
}
// CHECK: error: 'shift.kernel' op 'DW[k,n] += G[m,n] * X[m,k]' ranges over k=4, n=8, m=8, not over the kernel's axes m=8, k=8, n=8: the products of a kernel share one iteration space

// -----

// one product may not read another's result
func.func @chained(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c, %d = shift.kernel "C[m,n] += A[m,k] * B[k,n]", "D[m,n] += C[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 1, 1, 1>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
  }
  func.return %c, %d : tensor<8x8xf32>, tensor<8x8xf32>
}
// CHECK: error: 'shift.kernel' op tensor C is written by one expression and read by another: the products of a kernel are independent

// -----

// one result per expression
func.func @results(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]", "D[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 1, 1, 1>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
  }
  func.return %c : tensor<8x8xf32>
}
// CHECK: error: 'shift.kernel' op 2 expressions but 1 results: each expression computes one

// -----

// the only products a cost model prices together are a layer's gradient pair
func.func @not_a_pair(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %e: tensor<8x8xf32>, %f: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c, %d = shift.kernel "C[m,n] += A[m,k] * B[k,n]", "D[m,n] += E[m,k] * F[k,n]"(%a, %b, %e, %f) {grid = array<i64: 1, 1, 1>} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "D" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 1>}
    shift.ring "B" {temporal = array<i64: 1, 1, 1>}
    shift.ring "E" {temporal = array<i64: 1, 1, 1>}
    shift.ring "F" {temporal = array<i64: 1, 1, 1>}
  }
  func.return %c, %d : tensor<8x8xf32>, tensor<8x8xf32>
}
// CHECK: error: 'shift.kernel' op no cost model prices the products 'C[m,n] += A[m,k] * B[k,n]'; 'D[m,n] += E[m,k] * F[k,n]' as one kernel: a fused kernel is a layer's gradient pair (two contractions sharing one input, dY)
