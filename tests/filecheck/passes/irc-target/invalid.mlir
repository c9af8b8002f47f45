// RUN: irc-opt %s -p 'irc-target{device=tiny8}' --verify-diagnostics | filecheck %s --check-prefix=DEVICE
// RUN: irc-opt %s -p 'irc-target{cost=seed003}' --verify-diagnostics | filecheck %s --check-prefix=COST
// RUN: irc-opt %s -p 'irc-target{device=tiny5}' --verify-diagnostics | filecheck %s --check-prefix=UNKNOWN
// RUN: irc-opt %s -p 'rtensor-partition{device=tiny8}' --verify-diagnostics | filecheck %s --check-prefix=PARTITION
// RUN: irc-opt %s -p 'rtensor-partition{cost=seed003}' --verify-diagnostics | filecheck %s --check-prefix=PARTITION-COST
// RUN: irc-opt %s -p 'irc-target{device=tiny4 cost=t10},rtensor-partition' | filecheck %s --check-prefix=SAME

// One module, one target: a pass asked for another device or cost model than the one
// the module targets is an error, not a silent retarget.
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  func.func @mm(%a: tensor<8x16xf32>, %b: tensor<16x12xf32>) -> tensor<8x12xf32> {
    %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<8x16xf32>, tensor<16x12xf32>) -> tensor<8x12xf32>
    func.return %c : tensor<8x12xf32>
  }
}

// DEVICE: irc-target: the module targets device 'tiny4', not 'tiny8'; one module has one target
// COST: irc-target: the module targets cost model 't10', not 'seed003'; one module has one target
// UNKNOWN: irc-target: unknown device 'tiny5'; known devices: ipu-mk2, mtia-v1, tiny16, tiny4, tiny8
// PARTITION: rtensor-partition: the module targets device 'tiny4', not 'tiny8'; one module has one target
// PARTITION-COST: rtensor-partition: the module targets cost model 't10', not 'seed003'; one module has one target

// Asking for the target the module has is no error; rtensor-partition then plans for it.
// SAME: builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
// SAME: rtensor.op "C[m,n] += A[m,k] * B[k,n]"

// -----
// A target written on a function (hand-written IR) is the module's: rtensor-partition plans
// for it, and a pass asking for another chip is an error.
// RUN: irc-opt %S/Inputs/function-target.mlir -p 'rtensor-partition,rtensor-check' | filecheck %s --check-prefix=FUNCTION
// RUN: not irc-opt %S/Inputs/function-target.mlir -p 'rtensor-partition{device=tiny8}' 2>&1 | filecheck %s --check-prefix=FUNCTION-OTHER
// FUNCTION: builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
// FUNCTION: rtensor.op "C[m,n] += A[m,k] * B[k,n]"
// FUNCTION-OTHER: rtensor-partition: the module targets device 'tiny4', not 'tiny8'; one module has one target
