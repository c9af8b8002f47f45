// RUN: irc-opt %s -p 'rtensor-partition{device=tiny4}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: irc-opt %s -p 'rtensor-partition{mode=model}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=MODE
// RUN: irc-opt %s -p 'rtensor-partition{device=tiny5}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DEVICE
// RUN: irc-opt %s -p 'rtensor-partition{cost=roofline}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=COST

// tiny4 has 4 cores with 4 KiB each: this matmul needs far more per core.
func.func @too_big(%a: tensor<32x512xf32>, %b: tensor<512x256xf32>) -> tensor<32x256xf32> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<32x512xf32>, tensor<512x256xf32>) -> tensor<32x256xf32>
  func.return %c : tensor<32x256xf32>
}
// CHECK: invalid.mlir:8:3: error: 'te.op' op "C[m,n] += A[m,k] * B[k,n]" on tiny4: no plan fits: the least memory per core any plan needs is {{[0-9]+}} bytes, but tiny4 has 4096 bytes of SRAM per core
// MODE: rtensor-partition: mode=model is not available yet; known modes: op
// DEVICE: rtensor-partition: unknown device 'tiny5'; known devices: ipu-mk2, tiny16, tiny4, tiny8
// COST: rtensor-partition: unknown cost model 'roofline'; known cost models: seed003, t10

// -----

// The planner needs one layout per tensor: reading X at two index patterns has none.
func.func @two_patterns(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = te.op "Y[i,j] = X[i,j] + X[j,i]" (%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %y : tensor<4x4xf32>
}
// CHECK: invalid.mlir:20:3: error: 'te.op' op "Y[i,j] = X[i,j] + X[j,i]": the planner cannot describe it: tensor X is read with 2 different index patterns (X[i,j], X[j,i]); the planner gives each tensor one layout

// -----

// A dimension read at a constant index cannot be partitioned by any axis.
func.func @constant_index(%x: tensor<4x2xf32>) -> tensor<4xf32> {
  %y = te.op "Y[i] = X[i,0]" (%x) : (tensor<4x2xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: invalid.mlir:29:3: error: 'te.op' op "Y[i] = X[i,0]": the planner cannot describe it: dimension 1 of X is indexed by the constant 0; the planner needs every dimension indexed by an axis
