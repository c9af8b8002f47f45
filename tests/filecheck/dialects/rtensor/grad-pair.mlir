// RUN: irc-opt %s | filecheck %s
// RUN: %irc-roundtrip | filecheck %s

// rtensor.grad_pair: a layer's two gradients under one plan. F_op lists the shared axes
// in the dX expression's order (m, k, n); dY's type states its ring once (ft=[1,4]: 4
// partitions along n rotating around the 4 cores along k that share it), and both
// products read it.
// CHECK-LABEL: func.func @rotating
// CHECK-NEXT:    %{{.*}}, %{{.*}} = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) F_op = array<i64: 2, 4, 1> : (!rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>)
func.func @rotating(%dy: !rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>, %w: !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, %x: !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>) {
  %dx, %dw = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) F_op = array<i64: 2, 4, 1> : (!rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>)
  func.return %dx, %dw : !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>
}
