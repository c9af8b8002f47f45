// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16}' | filecheck %s
// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16 mode=op}' | filecheck %s
// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16}' --print-op-generic | irc-opt | filecheck %s

// An op the planner cannot describe (here a gather inside arithmetic, E[I[i],j] * 2) does not fail the
// model: it stays a te.op for the host/vendor fallback with the reason in irc.remark,
// reading and writing builtin tensors; the ops around it are planned.
// CHECK-LABEL: func.func @embed
// CHECK:         %[[E:.*]] = te.op "G[i,j] = E[I[i],j] * 2" (%table, %ids) {irc.remark = "not planned: the planner cannot describe it (dimension 0 of E is indexed by I[i], which is not an affine index of axes; the planner cannot partition it); left for the host/vendor fallback"} : (tensor<16x8xf32>, tensor<4xi32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[G:.*]] = rtensor.relayout %[[E]] : tensor<4x8xf32> -> !rtensor.tensor<4x8xf32,
// CHECK:         rtensor.op "H[m,n] += G[m,k] * W[k,n]" (%[[G]], %{{.*}})
// CHECK-NOT:     te.op
// CHECK:         func.return
func.func @embed(%table: tensor<16x8xf32> {irc.weight}, %ids: tensor<4xi32>, %w: tensor<8x8xf32> {irc.weight}) -> tensor<4x8xf32> {
  %g = te.op "G[i,j] = E[I[i],j] * 2" (%table, %ids) : (tensor<16x8xf32>, tensor<4xi32>) -> tensor<4x8xf32>
  %h = te.op "H[m,n] += G[m,k] * W[k,n]" (%g, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  func.return %h : tensor<4x8xf32>
}

// A tensor read at two index patterns falls back the same way; a planned producer's
// value goes back to a builtin tensor for the fallback op.
// CHECK-LABEL: func.func @mixed
// CHECK:         %[[S:.*]] = rtensor.op "S[i,j] = A[i,j] * 2"
// CHECK-NEXT:    %[[SH:.*]] = rtensor.relayout %[[S]] : !rtensor.tensor<{{.*}}> -> tensor<4x4xf32>
// CHECK-NEXT:    te.op "Y[i,j] = X[i,j] + X[j,i]" (%[[SH]]) {irc.remark = "not planned: the planner cannot describe it (tensor X is read with 2 different index patterns (X[i,j], X[j,i]); the planner gives each tensor one layout); left for the host/vendor fallback"}
func.func @mixed(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %s = te.op "S[i,j] = A[i,j] * 2" (%a) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = te.op "Y[i,j] = X[i,j] + X[j,i]" (%s) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %t : tensor<4x4xf32>
}

// Each tensor of an rtensor.op keeps its own element type: a cast is planned like any
// elementwise op (its input partition is i64, its output f32).
// CHECK-LABEL: func.func @cast
// CHECK:         %[[A:.*]] = rtensor.relayout %a : tensor<4x8xi64> -> !rtensor.tensor<4x8xi64,
// CHECK-NEXT:    rtensor.op "Y[i,j] = cast(A[i,j])" (%[[A]]) F_op = {{.*}} : (!rtensor.tensor<4x8xi64, {{.*}}>) -> !rtensor.tensor<4x8xf32,
// CHECK:         rtensor.op "Z[i,j] = Y[i,j] * 2"
// CHECK-NOT:     te.op
func.func @cast(%a: tensor<4x8xi64>) -> tensor<4x8xf32> {
  %y = te.op "Y[i,j] = cast(A[i,j])" (%a) : (tensor<4x8xi64>) -> tensor<4x8xf32>
  %z = te.op "Z[i,j] = Y[i,j] * 2" (%y) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}
