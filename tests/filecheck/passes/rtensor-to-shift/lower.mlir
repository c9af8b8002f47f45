// RUN: irc-opt %s -p rtensor-to-shift | filecheck %s
// RUN: irc-opt %s -p rtensor-to-shift | irc-opt --print-op-generic | irc-opt | filecheck %s
// RUN: irc-opt %s -p rtensor-to-shift,rotation-align | irc-run - --inputs %S/../Inputs/matmul.npz | filecheck %s --check-prefix=EXEC

// Each planned rtensor.op becomes a shift.kernel on host tensors: F_op is its grid, and
// every tensor's f_t (per dimension in its type) becomes a ring's f_t per op axis.
// Relayouts at the boundary and between the operators disappear at this level: a kernel
// reads the value its operand was relayouted from, and the layouts are its rings';
// shift-to-device then moves %c from C's layout into D's on chip (a device.relayout
// over the exchange), touching the host only at the function's edges.
func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %0 = rtensor.relayout %a : tensor<8x12xf32> -> !rtensor.tensor<8x12xf32, fs=[2,1], ft=[1,4]>
  %1 = rtensor.relayout %b : tensor<12x16xf32> -> !rtensor.tensor<12x16xf32, fs=[1,4], ft=[2,1]>
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%0, %1) F_op = array<i64: 2, 4, 1> : (!rtensor.tensor<8x12xf32, fs=[2,1], ft=[1,4]>, !rtensor.tensor<12x16xf32, fs=[1,4], ft=[2,1]>) -> !rtensor.tensor<8x16xf32, fs=[2,4], ft=[1,1]>
  %2 = rtensor.relayout %c : !rtensor.tensor<8x16xf32, fs=[2,4], ft=[1,1]> -> !rtensor.tensor<8x16xf32, fs=[1,16], ft=[1,1]>
  %d = rtensor.op "D[m,n] = relu(C[m,n])" (%2) F_op = array<i64: 1, 16> : (!rtensor.tensor<8x16xf32, fs=[1,16], ft=[1,1]>) -> !rtensor.tensor<8x16xf32, fs=[1,16], ft=[1,1]>
  %3 = rtensor.relayout %d : !rtensor.tensor<8x16xf32, fs=[1,16], ft=[1,1]> -> tensor<8x16xf32>
  func.return %3 : tensor<8x16xf32>
}
// CHECK:      func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
// CHECK-NEXT:   %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
// CHECK-NEXT:     shift.ring "C" {temporal = array<i64: 1, 1, 1>}
// CHECK-NEXT:     shift.ring "A" {temporal = array<i64: 1, 1, 4>}
// CHECK-NEXT:     shift.ring "B" {temporal = array<i64: 1, 1, 2>}
// CHECK-NEXT:   }
// CHECK-NEXT:   %d = shift.kernel "D[m,n] = relu(C[m,n])"(%c) {grid = array<i64: 1, 16>} : (tensor<8x16xf32>) -> tensor<8x16xf32> {
// CHECK-NEXT:     shift.ring "D" {temporal = array<i64: 1, 1>}
// CHECK-NEXT:     shift.ring "C" {temporal = array<i64: 1, 1>}
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %d : tensor<8x16xf32>
// CHECK-NOT:  rtensor.

// relu of the te-level matmul
// EXEC:      result0: tensor<8x16, float32>
// EXEC-NEXT: {{\[\[}} 0.  0.  0. ... 13.  0.  0.]
// EXEC-NEXT:  [ 0.  9.  3. ...  7.  0.  0.]
