// RUN: irc-opt %s -p rtensor-to-shift | filecheck %s
// RUN: irc-opt %s -p 'rtensor-check,rtensor-to-shift,rotation-align' | filecheck %s --check-prefix=ALIGN
// RUN: irc-opt %s -p 'rtensor-to-shift,rotation-align,shift-to-device' | filecheck %s --check-prefix=DEVICE
// RUN: irc-opt %s -p 'rtensor-to-shift,rotation-align,shift-to-device,device-alloc' | irc-run - --entry rotating --report | filecheck %s --check-prefix=EXEC
// RUN: irc-opt %s -p 'rtensor-to-shift,rotation-align,shift-to-device,device-alloc' | irc-run - --entry two_rings --report | filecheck %s --check-prefix=EXEC2

// A fused pair is ONE compute-shift kernel of two products: both expressions and both
// results, dY, W and X as its operands (dY once), one ring per tensor from the pair's
// plan. rotation-align gives it one loop nest over the five tensors, computing a step of
// each gradient per step (a shift.compute naming each), and the pair's fused price
// (rtensor-check has checked planned_cycles on the grad_pair against the plan).
// shift-to-device then emits per step the dX and the dW device.mma and, between steps,
// one shift of each tensor of the advancing loop: dY's ring feeds both gradients.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @rotating(%dy: tensor<8x8xf32>, %w: tensor<8x8xf32>, %x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    %0 = rtensor.relayout %dy : tensor<8x8xf32> -> !rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>
    %1 = rtensor.relayout %w : tensor<8x8xf32> -> !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>
    %2 = rtensor.relayout %x : tensor<8x8xf32> -> !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>
    %3, %4 = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%0, %1, %2) F_op = array<i64: 2, 4, 1> {planned_cycles = 9491.5 : f64} : (!rtensor.tensor<8x8xf32, fs=[2,1], ft=[1,4]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>, !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>) -> (!rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2>)
    %dx = rtensor.relayout %3 : !rtensor.tensor<8x8xf32, fs=[2,4], ft=[1,1]> -> tensor<8x8xf32>
    %dw = rtensor.relayout %4 : !rtensor.tensor<8x8xf32, fs=[4,1], ft=[1,1], replicas=2> -> tensor<8x8xf32>
    func.return %dx, %dw : tensor<8x8xf32>, tensor<8x8xf32>
  }

  // dY rotates along n (f_t 2) and X along k (f_t 2): a nest of two loops; W rests.
  func.func @two_rings(%dy: tensor<8x8xf32>, %w: tensor<8x8xf32>, %x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    %0 = rtensor.relayout %dy : tensor<8x8xf32> -> !rtensor.tensor<8x8xf32, fs=[1,4], ft=[1,2], replicas=2>
    %1 = rtensor.relayout %w : tensor<8x8xf32> -> !rtensor.tensor<8x8xf32, fs=[4,4], ft=[1,1]>
    %2 = rtensor.relayout %x : tensor<8x8xf32> -> !rtensor.tensor<8x8xf32, fs=[1,4], ft=[1,2], replicas=2>
    %3, %4 = rtensor.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%0, %1, %2) F_op = array<i64: 1, 4, 4> {planned_cycles = 9625.24 : f64} : (!rtensor.tensor<8x8xf32, fs=[1,4], ft=[1,2], replicas=2>, !rtensor.tensor<8x8xf32, fs=[4,4], ft=[1,1]>, !rtensor.tensor<8x8xf32, fs=[1,4], ft=[1,2], replicas=2>) -> (!rtensor.tensor<8x8xf32, fs=[1,4], ft=[1,1], replicas=4>, !rtensor.tensor<8x8xf32, fs=[4,4], ft=[1,1]>)
    %dx = rtensor.relayout %3 : !rtensor.tensor<8x8xf32, fs=[1,4], ft=[1,1], replicas=4> -> tensor<8x8xf32>
    %dw = rtensor.relayout %4 : !rtensor.tensor<8x8xf32, fs=[4,4], ft=[1,1]> -> tensor<8x8xf32>
    func.return %dx, %dw : tensor<8x8xf32>, tensor<8x8xf32>
  }
}
// CHECK-LABEL: func.func @rotating
// CHECK-NEXT:    %dx, %dw = shift.kernel "DX[m,k] += G[m,n] * W[k,n]", "DW[k,n] += G[m,n] * X[m,k]"(%dy, %w, %x) {grid = array<i64: 2, 4, 1>} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
// CHECK-NEXT:      shift.ring "DX" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:      shift.ring "DW" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:      shift.ring "G" {temporal = array<i64: 1, 1, 4>}
// CHECK-NEXT:      shift.ring "W" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:      shift.ring "X" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %dx, %dw
// CHECK-LABEL: func.func @two_rings
// CHECK:           shift.ring "G" {temporal = array<i64: 1, 1, 2>}
// CHECK-NEXT:      shift.ring "W" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:      shift.ring "X" {temporal = array<i64: 1, 2, 1>}

// ALIGN-LABEL: func.func @rotating
// ALIGN:         shift.kernel {{.*}} {grid = array<i64: 2, 4, 1>, planned_cycles = 9.491500e+03 : f64}
// ALIGN:           shift.loop "n" attributes {trips = 4 : i64, stride = 1 : i64, rotating = ["G"], start = affine_map<(d0) -> ((d0 mod 4))>} {
// ALIGN-NEXT:        shift.compute "DX"
// ALIGN-NEXT:        shift.compute "DW"
// ALIGN-NEXT:      }
// ALIGN-NEXT:    }
// ALIGN-LABEL: func.func @two_rings
// ALIGN:         shift.kernel {{.*}} {grid = array<i64: 1, 4, 4>, planned_cycles = 9.625240e+03 : f64}
// ALIGN:           shift.loop "k" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["X"], start = affine_map<(d0) -> ((d0 mod 2))>} {
// ALIGN-NEXT:        shift.loop "n" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["G"], start = affine_map<(d0) -> (((d0 floordiv 4) mod 2))>} {
// ALIGN-NEXT:          shift.compute "DX"
// ALIGN-NEXT:          shift.compute "DW"

// 4 steps of both products, dY shifted 3 times (once between two steps), W and X never
// DEVICE-LABEL: func.func @rotating
// DEVICE-NOT:    device.shift
// DEVICE:        device.mma "DX[m,k] += G[m,n] * W[k,n]" %DX, (%G, %W) {{.*}} step = 0 : i64}
// DEVICE-NEXT:   device.mma "DW[k,n] += G[m,n] * X[m,k]" %DW, (%G, %X) {{.*}} step = 0 : i64}
// DEVICE-NEXT:   device.shift %G through %G_recv
// DEVICE-NEXT:   device.sync
// DEVICE-NEXT:   device.mma "DX{{.*}} step = 1 : i64}
// DEVICE-NEXT:   device.mma "DW{{.*}} step = 1 : i64}
// DEVICE-NEXT:   device.shift %G through %G_recv
// DEVICE-NEXT:   device.sync
// DEVICE-NEXT:   device.mma "DX{{.*}} step = 2 : i64}
// DEVICE-NEXT:   device.mma "DW{{.*}} step = 2 : i64}
// DEVICE-NEXT:   device.shift %G through %G_recv
// DEVICE-NEXT:   device.sync
// DEVICE-NEXT:   device.mma "DX{{.*}} step = 3 : i64}
// DEVICE-NEXT:   device.mma "DW{{.*}} step = 3 : i64}
// each gradient's own output reduction (dW's 2 replicas: the cores splitting m)
// DEVICE-NEXT:   device.reduce %DX {{{.*}}replicas = 1 : i64
// DEVICE:        device.reduce %DW {{{.*}}replicas = 2 : i64
// DEVICE-NOT:    device.shift
// DEVICE-LABEL: func.func @two_rings
// DEVICE:        device.mma "DX{{.*}} step = 0 : i64}
// DEVICE-NEXT:   device.mma "DW{{.*}} step = 0 : i64}
// DEVICE-NEXT:   device.shift %G through %G_recv
// DEVICE-NEXT:   device.sync
// DEVICE-NEXT:   device.mma "DX{{.*}} step = 1 : i64}
// DEVICE-NEXT:   device.mma "DW{{.*}} step = 1 : i64}
// DEVICE-NEXT:   device.shift %X through %X_recv
// DEVICE-NEXT:   device.sync
// DEVICE-NEXT:   device.mma "DX{{.*}} step = 2 : i64}
// DEVICE-NEXT:   device.mma "DW{{.*}} step = 2 : i64}
// DEVICE-NEXT:   device.shift %G through %G_recv
// DEVICE-NEXT:   device.sync
// DEVICE-NEXT:   device.mma "DX{{.*}} step = 3 : i64}
// DEVICE-NEXT:   device.mma "DW{{.*}} step = 3 : i64}
// DEVICE-NEXT:   device.reduce %DX {{{.*}}replicas = 4 : i64

// The interpreted kernel takes the planned cycles (9,491.5 and 9,625.24)
// EXEC: chip time on tiny16
// EXEC: kernels without host I/O: 9,492 cycles
// EXEC2: kernels without host I/O: 9,625 cycles
