// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16}' | filecheck %s
// RUN: irc-opt %s -p 'inference{device=tiny16}' | irc-run - --report | filecheck %s --check-prefix=EXEC

// Three 256x256 f16 weights rest on tiny16's 64 KiB cores (8 KiB each per core at
// rest): a matmul's fastest plan needs 45,056 bytes per core, more than what the idle
// weights and the activations kept across it leave, so the model-wide plan runs the
// matmuls on a plan that fits and says why (issue 23: a baseline's plan of an op can
// beat irc's only when memory forces it, and then the plan says so). The relus, whose
// fastest plans fit, carry no remark. The program still runs as planned.
// CHECK-LABEL: func.func @main
// CHECK:         rtensor.op "H[m,n] += X[m,k] * W[k,n]"{{.*}}irc.remark = "memory-bound: runs at {{[0-9]+}} cycles where its fastest plan takes 12918; that plan needs 45056 bytes per core and the idle weights and the tensors kept on chip across it leave {{[0-9]+}}"
// CHECK-NOT:     rtensor.op "R[m,n] = relu(H[m,n])"{{.*}}irc.remark
// EXEC: model-wide plan: [[CYCLES:[0-9,]+]] cycles predicted, [[CYCLES]] interpreted (ratio 1.0000)
func.func @main(%x: tensor<64x256xf16> {irc.name = "x"}, %w0: tensor<256x256xf16> {irc.name = "w0", irc.weight}, %w1: tensor<256x256xf16> {irc.name = "w1", irc.weight}, %w2: tensor<256x256xf16> {irc.name = "w2", irc.weight}) -> (tensor<64x256xf16> {irc.name = "y"}) {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w0) : (tensor<64x256xf16>, tensor<256x256xf16>) -> tensor<64x256xf16>
  %r0 = te.op "R[m,n] = relu(H[m,n])" (%h0) : (tensor<64x256xf16>) -> tensor<64x256xf16>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%r0, %w1) : (tensor<64x256xf16>, tensor<256x256xf16>) -> tensor<64x256xf16>
  %r1 = te.op "R[m,n] = relu(H[m,n])" (%h1) : (tensor<64x256xf16>) -> tensor<64x256xf16>
  %h2 = te.op "H[m,n] += X[m,k] * W[k,n]" (%r1, %w2) : (tensor<64x256xf16>, tensor<256x256xf16>) -> tensor<64x256xf16>
  %r2 = te.op "R[m,n] = relu(H[m,n])" (%h2) : (tensor<64x256xf16>) -> tensor<64x256xf16>
  func.return %r2 : tensor<64x256xf16>
}
