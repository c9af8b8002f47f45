// RUN: irc-opt %s --split-input-file --verify-diagnostics -p rtensor-check | filecheck %s

// rtensor-check on rtensor.grad_pair: the T10 constraints over the five tensors of both
// products (irc.planner.igo_pair), the types' replicas and padding, planned_cycles.

// A legal fused plan: dY rotates (4 partitions along n) around the 4 cores along k
// sharing it; both products read it at every step. Nothing to report.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @rotating(%dy: !rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>, %w: !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, %x: !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>) {
    %dx, %dw = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) F_op = array<i64: 2, 4, 1> : (!rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>)
    func.return %dx, %dw : !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>
  }
}
// CHECK-LABEL: func.func @rotating
// CHECK:         rtensor.grad_pair

// -----

// In one loop nest the paces of W (dX product) and dW (dW product) on n must divide one
// another: 2 and 3 do not.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @chain(%dy: !rtensor.tensor<12x12xf32, fs=[6,1], ft=[1,1]>, %w: !rtensor.tensor<12x12xf32, fs=[1,1], ft=[1,2], replicas=3>, %x: !rtensor.tensor<12x12xf32, fs=[6,1], ft=[1,1]>) -> (!rtensor.tensor<12x12xf32, fs=[6,1], ft=[1,1]>, !rtensor.tensor<12x12xf32, fs=[1,1], ft=[1,3], replicas=2>) {
    %dx, %dw = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) F_op = array<i64: 6, 1, 1> : (!rtensor.tensor<12x12xf32, fs=[6,1], ft=[1,1]>, !rtensor.tensor<12x12xf32, fs=[1,1], ft=[1,2], replicas=3>, !rtensor.tensor<12x12xf32, fs=[6,1], ft=[1,1]>) -> (!rtensor.tensor<12x12xf32, fs=[6,1], ft=[1,1]>, !rtensor.tensor<12x12xf32, fs=[1,1], ft=[1,3], replicas=2>)
    func.return %dx, %dw : !rtensor.tensor<12x12xf32, fs=[6,1], ft=[1,1]>, !rtensor.tensor<12x12xf32, fs=[1,1], ft=[1,3], replicas=2>
  }
}
// CHECK: grad-pair.mlir:23:5: error: 'rtensor.grad_pair' op plan breaks a constraint: temporal factors on axis n must divide one another (both products rotate in one loop nest), but DW has 3, G has 1, W has 2

// -----

// dY's replicas are the 4 cores sharing its partition over its 4 ring positions: 1, not 4.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @replicas(%dy: !rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4], replicas=4>, %w: !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, %x: !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>) {
    %dx, %dw = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) F_op = array<i64: 2, 4, 1> : (!rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4], replicas=4>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>)
    func.return %dx, %dw : !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>
  }
}
// CHECK: grad-pair.mlir:34:5: error: 'rtensor.grad_pair' op G has replicas=4, but the plan gives 1 (cores sharing G's partition / prod(f_t))

// -----

// planned_cycles must be what the plan takes on the target.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @cycles(%dy: !rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>, %w: !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, %x: !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>) {
    %dx, %dw = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) F_op = array<i64: 2, 4, 1> {planned_cycles = 100.0 : f64} : (!rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>)
    func.return %dx, %dw : !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>
  }
}
// CHECK: grad-pair.mlir:45:5: error: 'rtensor.grad_pair' op planned_cycles says 100.00 cycles, but the plan takes {{[0-9,.]+}} on tiny16 under t10
