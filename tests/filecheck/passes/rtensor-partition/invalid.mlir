// RUN: irc-opt %s -p 'rtensor-partition{device=tiny4 strict=true}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: irc-opt %s -p 'rtensor-partition{device=tiny4 mode=op strict=true}' --split-input-file --verify-diagnostics | filecheck %s
// RUN: irc-opt %s -p 'rtensor-partition{mode=fast}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=MODE
// RUN: irc-opt %s -p 'rtensor-partition{device=tiny5}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DEVICE
// RUN: irc-opt %s -p 'rtensor-partition{cost=roofline}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=COST

// tiny4 has 4 cores with 4 KiB each: this matmul needs far more per core (both modes).
func.func @too_big(%a: tensor<32x512xf32>, %b: tensor<512x256xf32>) -> tensor<32x256xf32> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<32x512xf32>, tensor<512x256xf32>) -> tensor<32x256xf32>
  func.return %c : tensor<32x256xf32>
}
// CHECK: invalid.mlir:9:3: error: 'te.op' op "C[m,n] += A[m,k] * B[k,n]" on tiny4: no plan fits: the least memory per core any plan needs is {{[0-9]+}} bytes, but tiny4 has 4096 bytes of SRAM per core
// MODE: rtensor-partition: unknown mode=fast; known modes: model, op
// DEVICE: rtensor-partition: unknown device 'tiny5'; known devices: ipu-mk2, {{.*}}tiny4, tiny8
// COST: rtensor-partition: unknown cost model 'roofline'; known cost models: engdesign, igo, mtia, seed003, t10

// -----

// strict=true: the planner needs one layout per tensor; reading X at two index patterns has none.
func.func @two_patterns(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = te.op "Y[i,j] = X[i,j] + X[j,i]" (%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %y : tensor<4x4xf32>
}
// CHECK: invalid.mlir:21:3: error: 'te.op' op "Y[i,j] = X[i,j] + X[j,i]": the planner cannot describe it: tensor X is read with 2 different index patterns (X[i,j], X[j,i]); the planner gives each tensor one layout

// -----

// strict=true: an index read from another tensor (a gather) cannot be partitioned.
func.func @gather(%e: tensor<16x8xf32>, %ids: tensor<4xi32>) -> tensor<4x8xf32> {
  %g = te.op "G[i,j] = E[I[i],j] * 2" (%e, %ids) : (tensor<16x8xf32>, tensor<4xi32>) -> tensor<4x8xf32>
  func.return %g : tensor<4x8xf32>
}
// CHECK: invalid.mlir:30:3: error: 'te.op' op "G[i,j] = E[I[i],j] * 2": the planner cannot describe it: dimension 0 of E is indexed by I[i], which is not an affine index of axes; the planner cannot partition it
