// RUN: irc-opt %s -p 'inference{device=tiny16}' | filecheck %s
// RUN: irc-opt %s -p 'inference{device=tiny16}' | irc-run - --inputs %S/../Inputs/matmul.npz --report | filecheck %s --check-prefix=EXEC
// RUN: irc-run %s --inputs %S/../Inputs/matmul.npz | filecheck %s --check-prefix=EXEC

// te -> rtensor -> shift -> device in one named pipeline, then run: the device-level
// result is the te-level one. The module records its target once; the matmul's result
// stays on chip and moves into the relu's layout (no host round trip between them).
func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32>
  %d = te.op "D[m,n] = relu(C[m,n])" (%c) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  func.return %d : tensor<8x16xf32>
}
// CHECK:     builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {name = "tiny16", {{.*}}cores = 16 : i64{{.*}}}>} {
// CHECK:     func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.planned_cycles = {{.*}} : f64, irc.planned_peak_bytes = {{[0-9]+}} : i64} {
// CHECK:       %[[C:.*]] = device.alloc {name = "k1.C", cores = 16 : i64, {{.*}} offset = 0 : i64}
// CHECK:       device.mma "C[m,n] += A[m,k] * B[k,n]"
// CHECK-NOT:   device.store
// CHECK:       device.alloc {name = "k2.D", cores = 16 : i64
// CHECK:       device.relayout %[[C]] into
// CHECK:       device.vector "D[m,n] = relu(C[m,n])"
// CHECK:       %d = device.store
// CHECK:       func.return
// CHECK-NOT: te.op
// CHECK-NOT: rtensor.
// CHECK-NOT: shift.

// EXEC:      result0: tensor<8x16, float32>
// EXEC-NEXT: {{\[\[}} 0.  0.  0. ... 13.  0.  0.]
// EXEC-NEXT:  [ 0.  9.  3. ...  7.  0.  0.]
