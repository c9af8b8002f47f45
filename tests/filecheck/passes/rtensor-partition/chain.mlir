// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16 cost=t10 mode=op}' | filecheck %s

// Two operators in a row: the value stays on the chip between them. When the second
// op's plan wants another layout there is exactly one on-chip relayout (rtensor to
// rtensor); no round trip through a builtin tensor is left behind.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[A:.*]] = rtensor.relayout %a : tensor<8x16xf32> -> !rtensor.tensor<8x16xf32,
// CHECK-NEXT:    %[[B:.*]] = rtensor.relayout %b : tensor<16x12xf32> -> !rtensor.tensor<16x12xf32,
// CHECK-NEXT:    %[[C:.*]] = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%[[A]], %[[B]]) F_op = array<i64: 2, 4, 2> : {{.*}} -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
// CHECK-NEXT:    %[[C2:.*]] = rtensor.relayout %[[C]] : !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2> -> !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1]>
// CHECK-NEXT:    %[[Y:.*]] = rtensor.op "Y[m,n] = relu(C[m,n])" (%[[C2]]) F_op = array<i64: 4, 4>
// CHECK-NEXT:    %[[Z:.*]] = rtensor.op "Z[m,n] = Y[m,n] * 2" (%[[Y]]) F_op = array<i64: 4, 4>
// CHECK-NEXT:    %[[R:.*]] = rtensor.relayout %[[Z]] : !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1]> -> tensor<8x12xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<8x12xf32>
func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x12xf32>) -> tensor<8x12xf32> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<8x16xf32>, tensor<16x12xf32>) -> tensor<8x12xf32>
  %y = te.op "Y[m,n] = relu(C[m,n])" (%c) : (tensor<8x12xf32>) -> tensor<8x12xf32>
  %z = te.op "Z[m,n] = Y[m,n] * 2" (%y) : (tensor<8x12xf32>) -> tensor<8x12xf32>
  func.return %z : tensor<8x12xf32>
}

// An op that is not a te.op (here te.opaque) reads the builtin tensor.
// CHECK-LABEL: func.func @opaque
// CHECK:         %[[S:.*]] = rtensor.op "S[i,j] = A[i,j] + B[i,j]"
// CHECK-NEXT:    %[[T:.*]] = rtensor.relayout %[[S]] : !rtensor.tensor<{{.*}}> -> tensor<4x8xf32>
// CHECK-NEXT:    te.opaque "TopK"(%[[T]])
func.func @opaque(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x2xf32> {
  %s = te.op "S[i,j] = A[i,j] + B[i,j]" (%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = te.opaque "TopK"(%s) {k = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x2xf32>
  func.return %t : tensor<4x2xf32>
}
