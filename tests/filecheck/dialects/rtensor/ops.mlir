// RUN: irc-opt %s | irc-opt | filecheck %s
// RUN: %irc-roundtrip | filecheck %s

// A matmul on 16 cores with A rotating along k (f_t 4 = the 4 cores sharing A).
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%a: !rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,4]>, %b: !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
// CHECK-NEXT:    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 2, 4, 2> : (!rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,4]>, !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
func.func @matmul(%a: !rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,4]>, %b: !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 2, 4, 2> : (!rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,4]>, !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
  func.return %c : !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
}

// Padding: m = 10 on 4 core groups pads to 12; the padded shape is part of the type.
// Omitted fields default to fs = ft = 1, replicas = 1, padded = shape.
// CHECK-LABEL: func.func @padded
// CHECK:         rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%{{.*}}, %{{.*}}) F_op = array<i64: 4, 4, 1> : (!rtensor.tensor<10x16xf32, fs=[4,1], ft=[1,1], replicas=4, padded=12x16>, !rtensor.tensor<16x12xf32, fs=[1,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<10x12xf32, fs=[4,4], ft=[1,1], padded=12x12>
// CHECK:         rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%{{.*}}, %{{.*}}) F_op = array<i64: 1, 1, 1> : (!rtensor.tensor<10x16xf32, fs=[1,1], ft=[1,1]>, !rtensor.tensor<16x12xf32, fs=[1,1], ft=[1,1]>) -> !rtensor.tensor<10x12xf32, fs=[1,1], ft=[1,1]>
func.func @padded(%a: !rtensor.tensor<10x16xf32, fs=[4,1], ft=[1,1], replicas=4, padded=12x16>, %b: !rtensor.tensor<16x12xf32, fs=[1,4], replicas=4>, %a1: !rtensor.tensor<10x16xf32>, %b1: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<10x12xf32, fs=[4,4], ft=[1,1], padded=12x12> attributes {irc.target = #irc.target<"ipu-mk2", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 4, 4, 1> : (!rtensor.tensor<10x16xf32, fs=[4,1], ft=[1,1], replicas=4, padded=12x16>, !rtensor.tensor<16x12xf32, fs=[1,4], replicas=4>) -> !rtensor.tensor<10x12xf32, fs=[4,4], padded=12x12>
  %d = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a1, %b1) F_op = array<i64: 1, 1, 1> : (!rtensor.tensor<10x16xf32>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<10x12xf32>
  func.return %c : !rtensor.tensor<10x12xf32, fs=[4,4], ft=[1,1], padded=12x12>
}

// Compound indices: a conv input dimension h+r has one factor per term (T10 §5).
// CHECK-LABEL: func.func @conv
// CHECK:         %0 = rtensor.relayout %x : tensor<2x4x10x10xf32> -> !rtensor.tensor<2x4x10x10xf32, fs=[2,1,2+1,4+1], ft=[1,1,1+1,1+1]>
// CHECK-NEXT:    %1 = rtensor.relayout %w : tensor<8x4x3x3xf32> -> !rtensor.tensor<8x4x3x3xf32, fs=[1,1,1,1], ft=[1,1,1,1], replicas=16>
// CHECK-NEXT:    %y = rtensor.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]" (%0, %1) F_op = array<i64: 2, 1, 2, 4, 1, 1, 1>
// CHECK-NEXT:    %y_1 = rtensor.relayout %y : !rtensor.tensor<2x8x8x8xf32, fs=[2,1,2,4], ft=[1,1,1,1]> -> tensor<2x8x8x8xf32>
func.func @conv(%x: tensor<2x4x10x10xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<2x8x8x8xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %0 = rtensor.relayout %x : tensor<2x4x10x10xf32> -> !rtensor.tensor<2x4x10x10xf32, fs=[2,1,2+1,4+1], ft=[1,1,1+1,1+1]>
  %1 = rtensor.relayout %w : tensor<8x4x3x3xf32> -> !rtensor.tensor<8x4x3x3xf32, fs=[1,1,1,1], ft=[1,1,1,1], replicas=16>
  %y = rtensor.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]" (%0, %1) F_op = array<i64: 2, 1, 2, 4, 1, 1, 1> : (!rtensor.tensor<2x4x10x10xf32, fs=[2,1,2+1,4+1], ft=[1,1,1+1,1+1]>, !rtensor.tensor<8x4x3x3xf32, fs=[1,1,1,1], ft=[1,1,1,1], replicas=16>) -> !rtensor.tensor<2x8x8x8xf32, fs=[2,1,2,4], ft=[1,1,1,1]>
  %y_1 = rtensor.relayout %y : !rtensor.tensor<2x8x8x8xf32, fs=[2,1,2,4], ft=[1,1,1,1]> -> tensor<2x8x8x8xf32>
  func.return %y_1 : tensor<2x8x8x8xf32>
}

// On-chip layout change between two plans of the same tensor.
// CHECK-LABEL: func.func @relayout
// CHECK-NEXT:    %0 = rtensor.relayout %c : !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2> -> !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1]>
func.func @relayout(%c: !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1]> {
  %0 = rtensor.relayout %c : !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2> -> !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1]>
  func.return %0 : !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1]>
}
