// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16}' | filecheck %s
// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16}' --print-op-generic | irc-opt | filecheck %s

// Every kind of operator the planner knows, planned for a 16-core test chip: te.op
// becomes rtensor.op between relayouts onto and off the chip.
// CHECK-LABEL: func.func @batched(%q: tensor<4x8x16xf32>, %k: tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
// CHECK-NEXT:    %[[Q:.*]] = rtensor.relayout %q : tensor<4x8x16xf32> -> !rtensor.tensor<4x8x16xf32, fs=[{{.*}}], ft=[{{.*}}]{{.*}}>
// CHECK-NEXT:    %[[K:.*]] = rtensor.relayout %k : tensor<4x16x8xf32> -> !rtensor.tensor<4x16x8xf32, fs=[{{.*}}]
// CHECK-NEXT:    %[[S:.*]] = rtensor.op "S[b,i,j] += Q[b,i,d] * K[b,d,j] * 0.25" (%[[Q]], %[[K]]) F_op = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+}}>
// CHECK-NEXT:    %[[R:.*]] = rtensor.relayout %[[S]] : !rtensor.tensor<4x8x8xf32, {{.*}}> -> tensor<4x8x8xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<4x8x8xf32>
func.func @batched(%q: tensor<4x8x16xf32>, %k: tensor<4x16x8xf32>) -> tensor<4x8x8xf32> {
  %s = te.op "S[b,i,j] += Q[b,i,d] * K[b,d,j] * 0.25" (%q, %k) : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  func.return %s : tensor<4x8x8xf32>
}

// Compound indices: every term of h+r and w+s gets its own factors.
// CHECK-LABEL: func.func @conv
// CHECK:         rtensor.relayout %x : tensor<2x4x10x10xf32> -> !rtensor.tensor<2x4x10x10xf32, fs=[{{[0-9]+}},{{[0-9]+}},{{[0-9]+}}+{{[0-9]+}},{{[0-9]+}}+{{[0-9]+}}], ft=[{{[0-9]+}},{{[0-9]+}},{{[0-9]+}}+{{[0-9]+}},{{[0-9]+}}+{{[0-9]+}}]
// CHECK:         rtensor.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]" ({{.*}}) F_op = array<i64: {{[0-9]+, [0-9]+, [0-9]+, [0-9]+, [0-9]+, [0-9]+, [0-9]+}}>
// CHECK-NOT:     te.op
func.func @conv(%x: tensor<2x4x10x10xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<2x8x8x8xf32> {
  %y = te.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]" (%x, %w) : (tensor<2x4x10x10xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x8x8xf32>
  func.return %y : tensor<2x8x8x8xf32>
}

// CHECK-LABEL: func.func @strided
// CHECK:         !rtensor.tensor<1x3x9x9xf32, fs=[{{[0-9]+}},{{[0-9]+}},{{[0-9]+}}+{{[0-9]+}},{{[0-9]+}}+{{[0-9]+}}]
// CHECK:         rtensor.op "Y[n,f,h,w] += X[n,c,2*h+r,2*w+s] * W[f,c,r,s]"
func.func @strided(%x: tensor<1x3x9x9xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %y = te.op "Y[n,f,h,w] += X[n,c,2*h+r,2*w+s] * W[f,c,r,s]" (%x, %w) : (tensor<1x3x9x9xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}

// Elementwise: all three tensors share one layout, so no rotation and no replicas.
// CHECK-LABEL: func.func @add
// CHECK:         %[[A:.*]] = rtensor.relayout %a : tensor<16x32xf32> -> !rtensor.tensor<16x32xf32, fs={{\[}}[[FS:[0-9]+,[0-9]+]]{{\]}}, ft=[1,1]>
// CHECK-NEXT:    %[[B:.*]] = rtensor.relayout %b : tensor<16x32xf32> -> !rtensor.tensor<16x32xf32, fs={{\[}}[[FS]]{{\]}}, ft=[1,1]>
// CHECK-NEXT:    rtensor.op "C[i,j] = A[i,j] + B[i,j]" (%[[A]], %[[B]]) F_op = {{.*}} -> !rtensor.tensor<16x32xf32, fs={{\[}}[[FS]]{{\]}}, ft=[1,1]>
func.func @add(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %c = te.op "C[i,j] = A[i,j] + B[i,j]" (%a, %b) : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  func.return %c : tensor<16x32xf32>
}

// CHECK-LABEL: func.func @rowsum
// CHECK:         rtensor.op "S[i] += A[i,j]" ({{.*}}) F_op = array<i64: {{[0-9]+, [0-9]+}}> : (!rtensor.tensor<16x32xf32, {{.*}}>) -> !rtensor.tensor<16xf32, {{.*}}>
func.func @rowsum(%a: tensor<16x32xf32>) -> tensor<16xf32> {
  %c = te.op "S[i] += A[i,j]" (%a) : (tensor<16x32xf32>) -> tensor<16xf32>
  func.return %c : tensor<16xf32>
}

// CHECK-LABEL: func.func @pool
// CHECK:         rtensor.op "Y[n,c,h,w] max= X[n,c,2*h+r,2*w+s] where r in 2, s in 2"
func.func @pool(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %y = te.op "Y[n,c,h,w] max= X[n,c,2*h+r,2*w+s] where r in 2, s in 2" (%x) : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}
