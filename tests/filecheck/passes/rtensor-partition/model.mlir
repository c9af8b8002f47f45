// RUN: irc-opt %s -p 'rtensor-partition{device="%S/Inputs/tiny16-1152.toml"}' | filecheck %s
// RUN: irc-opt %s -p 'rtensor-partition{device="%S/Inputs/tiny16-1152.toml" mode=model}' --print-op-generic | irc-opt | filecheck %s
// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16}' | filecheck %s --check-prefix=ROOMY

// Model-wide planning (the default mode) on a 16-core chip with 1152 bytes per core: the
// three 2 KiB weights (irc.weight arguments) rest on chip throughout and cannot all rest
// in the layout their matmul executes in (the f32 accumulators of the partial sums take
// their room too), so the second and third rest in an idle plan that cuts their
// partitions finer (idle ft a multiple of the active ft) and pay a setup when their op
// starts. Each relu reads its matmul's output where it lies (a plan cutting the tensor as
// the matmul's does: `irc.planner.layout_match`), and the activation changes layout once,
// on chip, through one rtensor.relayout into the next matmul's layout. A matmul kept from
// its fastest plan by that memory says so (irc.remark "memory-bound: ...").
// CHECK-LABEL: func.func @mlp
// CHECK-NEXT:    %[[X:.*]] = rtensor.relayout %x : tensor<32x32xf16> -> !rtensor.tensor<32x32xf16, [[XL:.*]]>
// CHECK-NEXT:    %[[W0:.*]] = rtensor.relayout %w0 : tensor<32x32xf16> -> !rtensor.tensor<32x32xf16, [[WL:.*]]>
// CHECK-NEXT:    %[[H0:.*]] = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%[[X]], %[[W0]]) F_op = {{[^{]*}}{{[{]}}{{(irc.remark = "memory-bound: [^"]*", )?}}idle = #rtensor.idle<{W = [{{[0-9]+}},{{[0-9]+}}]}, bytes = {{[0-9]+}}, setup = {{[0-9]+}}>} : ({{.*}}) -> !rtensor.tensor<32x32xf16, [[HL:.*]]>
// CHECK-NEXT:    %[[R0:.*]] = rtensor.op "R[m,n] = relu(H[m,n])" (%[[H0]]) F_op = array<i64: {{.*}}> : (!rtensor.tensor<32x32xf16, [[HL]]>) -> !rtensor.tensor<32x32xf16, [[HL]]>
// CHECK-NEXT:    %[[R0R:.*]] = rtensor.relayout %[[R0]] : !rtensor.tensor<32x32xf16, [[HL]]> -> !rtensor.tensor<32x32xf16, [[XL1:.*]]>
// CHECK-NEXT:    %[[W1:.*]] = rtensor.relayout %w1 : tensor<32x32xf16> -> !rtensor.tensor<32x32xf16, [[WL1:.*]]>
// Identical layers in the same memory context are planned once: the third matmul gets
// the second one's plan.
// CHECK-NEXT:    %[[H1:.*]] = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%[[R0R]], %[[W1]]) F_op = [[F:[^{]*]]{{[{]}}{{(irc.remark = "memory-bound: [^"]*", )?}}idle = #rtensor.idle<[[IDLE:.*]], setup = {{[1-9][0-9]*}}>} : ({{.*}}) -> !rtensor.tensor<32x32xf16, [[HL1:.*]]>
// CHECK-NEXT:    rtensor.op "R[m,n] = relu(H[m,n])" (%[[H1]]) {{.*}} -> !rtensor.tensor<32x32xf16, [[HL1]]>
// CHECK-NEXT:    rtensor.relayout {{.*}} -> !rtensor.tensor<32x32xf16, [[XL1]]>
// CHECK-NEXT:    rtensor.relayout %w2
// CHECK-NEXT:    rtensor.op "H[m,n] += X[m,k] * W[k,n]" {{.*}} F_op = [[F]]{{[{]}}{{(irc.remark = "memory-bound: [^"]*", )?}}idle = #rtensor.idle<[[IDLE]], setup = {{[1-9][0-9]*}}>}
// CHECK-NEXT:    %[[R2:.*]] = rtensor.op "R[m,n] = relu(H[m,n])"
// CHECK-NEXT:    %[[OUT:.*]] = rtensor.relayout %[[R2]] : !rtensor.tensor<32x32xf16, [[HL1]]> -> tensor<32x32xf16>
// CHECK-NEXT:    func.return %[[OUT]] : tensor<32x32xf16>

// With 64 KiB per core every weight rests exactly as its op reads it: the idle plan
// is the active layout and the setup is free.
// ROOMY-LABEL: func.func @mlp
// ROOMY:         rtensor.op "H[m,n] += X[m,k] * W[k,n]" {{.*}} {{[{]}}{{(irc.remark = "memory-bound: [^"]*", )?}}idle = #rtensor.idle<{W = [1,1]}, bytes = {{[0-9]+}}, setup = 0>}
func.func @mlp(%x: tensor<32x32xf16> {irc.name = "x"}, %w0: tensor<32x32xf16> {irc.name = "w0", irc.weight},
               %w1: tensor<32x32xf16> {irc.name = "w1", irc.weight}, %w2: tensor<32x32xf16> {irc.name = "w2", irc.weight})
    -> tensor<32x32xf16> {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w0) : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
  %r0 = te.op "R[m,n] = relu(H[m,n])" (%h0) : (tensor<32x32xf16>) -> tensor<32x32xf16>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%r0, %w1) : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
  %r1 = te.op "R[m,n] = relu(H[m,n])" (%h1) : (tensor<32x32xf16>) -> tensor<32x32xf16>
  %h2 = te.op "H[m,n] += X[m,k] * W[k,n]" (%r1, %w2) : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
  %r2 = te.op "R[m,n] = relu(H[m,n])" (%h2) : (tensor<32x32xf16>) -> tensor<32x32xf16>
  func.return %r2 : tensor<32x32xf16>
}

// Without irc.weight marks there are no weights (nothing is guessed from operand
// positions): no op carries an idle plan. Ops whose layouts agree pass values straight
// on, with no relayout between them.
// CHECK-LABEL: func.func @unmarked
// CHECK-NOT:     idle
// CHECK:         %[[S:.*]] = rtensor.op "S[i,j] = A[i,j] + B[i,j]" ({{.*}}) F_op = [[FS:array<i64: [0-9, ]*>]]{{.*}} -> !rtensor.tensor<16x32xf16, [[L:.*]]>
// CHECK-NEXT:    %[[T:.*]] = rtensor.op "T[i,j] = relu(S[i,j])" (%[[S]]) F_op = [[FS]] : (!rtensor.tensor<16x32xf16, [[L]]>) -> !rtensor.tensor<16x32xf16, [[L]]>
// CHECK-NEXT:    rtensor.relayout %[[T]] : !rtensor.tensor<16x32xf16, [[L]]> -> tensor<16x32xf16>
// CHECK-NOT:     idle
// CHECK:         func.return
func.func @unmarked(%a: tensor<16x32xf16>, %b: tensor<16x32xf16>) -> tensor<16x32xf16> {
  %s = te.op "S[i,j] = A[i,j] + B[i,j]" (%a, %b) : (tensor<16x32xf16>, tensor<16x32xf16>) -> tensor<16x32xf16>
  %t = te.op "T[i,j] = relu(S[i,j])" (%s) : (tensor<16x32xf16>) -> tensor<16x32xf16>
  func.return %t : tensor<16x32xf16>
}
