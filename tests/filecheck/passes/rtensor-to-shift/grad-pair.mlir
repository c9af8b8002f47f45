// RUN: irc-opt %s -p rtensor-to-shift | filecheck %s
// RUN: irc-opt %s -p 'rtensor-to-shift,rotation-align,shift-to-device,device-alloc' | irc-run - --entry rotating --report | filecheck %s --check-prefix=EXEC

// A fused pair runs as two kernels (one compute-shift kernel computing both products
// per step is not lowered yet): the dX product's and the dW product's, each under the
// pair's F_op in its own axis order and with its own tensors' rings; dY's ring is the
// same in both.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @rotating(%dy: tensor<8x8xf32>, %w: tensor<8x8xf32>, %x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    %0 = rtensor.relayout %dy : tensor<8x8xf32> -> !rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>
    %1 = rtensor.relayout %w : tensor<8x8xf32> -> !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>
    %2 = rtensor.relayout %x : tensor<8x8xf32> -> !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>
    %3, %4 = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%0, %1, %2) F_op = array<i64: 2, 4, 1> : (!rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>)
    %dx = rtensor.relayout %3 : !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]> -> tensor<8x8xf32>
    %dw = rtensor.relayout %4 : !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2> -> tensor<8x8xf32>
    func.return %dx, %dw : tensor<8x8xf32>, tensor<8x8xf32>
  }
}
// CHECK-LABEL: func.func @rotating
// CHECK-NEXT:    %dx = shift.kernel "DX[m,k] += G[m,n] * W[k,n]"(%dy, %w) {grid = array<i64: 2, 4, 1>}
// CHECK-NEXT:      shift.ring "DX" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:      shift.ring "G" {temporal = array<i64: 1, 1, 4>}
// CHECK-NEXT:      shift.ring "W" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:    }
// CHECK-NEXT:    %dw = shift.kernel "DW[k,n] += G[m,n] * X[m,k]"(%dy, %x) {grid = array<i64: 4, 1, 2>}
// CHECK-NEXT:      shift.ring "DW" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:      shift.ring "G" {temporal = array<i64: 1, 4, 1>}
// CHECK-NEXT:      shift.ring "X" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %dx, %dw

// EXEC: chip time on tiny16
// EXEC: shift {{ *[1-9][0-9,]*}} cycles
