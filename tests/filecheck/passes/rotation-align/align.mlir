// RUN: irc-opt %s -p rotation-align | filecheck %s
// RUN: irc-opt %s -p rotation-align | irc-opt --print-op-generic | irc-opt | filecheck %s
// RUN: irc-opt %s -p rotation-align | irc-run - --inputs %S/../Inputs/matmul.npz | filecheck %s --check-prefix=EXEC
// RUN: irc-run %S/../Inputs/matmul_te.mlir --inputs %S/../Inputs/matmul.npz | filecheck %s --check-prefix=EXEC

// T10 Figure 7 / seed 003 Figure 3: A split 4 ways along k, B 2 ways. Steps on k = 4; the
// coarse loop rotates A and B, the fine loop only A (B shifts every 4/2 = 2 steps). The
// start digits skew the initial placement so that the partitions meet on every core; they
// are functions of the core id d0 (values 0 0 1 1 1 1 0 0 and 0 1 0 1 0 1 0 1 on cores 0..7).
func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 4>}
    shift.ring "B" {temporal = array<i64: 1, 1, 2>}
  }
  func.return %c : tensor<8x16xf32>
}
// rotation-align also records the planner's predicted time of the aligned kernel.
// CHECK:      %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>, planned_cycles = {{[0-9.]+e\+[0-9]+}} : f64}
// CHECK:      shift.ring "B" {temporal = array<i64: 1, 1, 2>}
// CHECK-NEXT: shift.loop "k" attributes {trips = 2 : i64, stride = 2 : i64, rotating = ["A", "B"], start = affine_map<(d0) -> (((((d0 floordiv 2) mod 2) + ((d0 floordiv 4) mod 2)) mod 2))>} {
// CHECK-NEXT:   shift.loop "k" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["A"], start = affine_map<(d0) -> ((d0 mod 2))>} {
// CHECK-NEXT:     shift.compute
// CHECK-NEXT:   }
// CHECK-NEXT: }

// the same numbers as the te-level program
// EXEC:      result0: tensor<8x16, float32>
// EXEC-NEXT: {{\[\[}} -2.  -7.  -2. ...  13.  -2.  -2.]
// EXEC-NEXT:  [-10.   9.   3. ...   7.  -9. -10.]
// EXEC-NEXT:  [  3.  11.  -6. ... -13.   5.   3.]
// EXEC-NEXT:  ...
// EXEC-NEXT:  [  7.   3.   9. ... -10.  -9.   7.]
// EXEC-NEXT:  [ 13.  -2.  -7. ...  -2.  -2.  13.]
// EXEC-NEXT:  [ -2.  -7.  -2. ...  13.  -2.  -2.]]
