// RUN: irc-opt %s --split-input-file --verify-diagnostics -p rtensor-check | filecheck %s

// T10 §4.2: prod(f_t) of a tensor must divide the number of cores sharing its partition.
func.func @ft_divides(%a: !rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,8]>, %b: !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [2, 4, 2] : (!rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,8]>, !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
  func.return %c : !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
}
// CHECK: invalid.mlir:5:3: error: 'rtensor.op' op plan breaks a T10 constraint: prod(f_t of A)=8 does not divide the 4 cores sharing A's partition

// -----

// T10 §4.2: temporal factors of tensors sharing an axis must divide one another.
func.func @ft_chain(%a: !rtensor.tensor<12x12xf32, fs=[2,2], ft=[1,3]>, %b: !rtensor.tensor<12x12xf32, fs=[2,3], ft=[2,1]>) -> !rtensor.tensor<12x12xf32, fs=[2,3], ft=[1,1], replicas=2> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [2, 3, 2] : (!rtensor.tensor<12x12xf32, fs=[2,2], ft=[1,3]>, !rtensor.tensor<12x12xf32, fs=[2,3], ft=[2,1]>) -> !rtensor.tensor<12x12xf32, fs=[2,3], ft=[1,1], replicas=2>
  func.return %c : !rtensor.tensor<12x12xf32, fs=[2,3], ft=[1,1], replicas=2>
}
// CHECK: invalid.mlir:14:3: error: 'rtensor.op' op plan breaks a T10 constraint: temporal factors on axis k must divide one another, but A has 3, B has 2

// -----

// Cores used (prod F_op = 32) must not exceed the device's 16.
func.func @cores(%a: !rtensor.tensor<8x16xf32, fs=[4,2], ft=[1,1], replicas=4>, %b: !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1], replicas=2> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [4, 4, 2] : (!rtensor.tensor<8x16xf32, fs=[4,2], ft=[1,1], replicas=4>, !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1], replicas=2>
  func.return %c : !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1], replicas=2>
}
// CHECK: invalid.mlir:23:3: error: 'rtensor.op' op plan breaks a T10 constraint: plan uses 32 cores, device tiny16 has 16

// -----

// Memory per core (partitions + rotation buffers) must fit in SRAM (4 KiB on tiny4).
func.func @memory(%a: !rtensor.tensor<64x64xf32, fs=[2,1], ft=[1,1], replicas=2>, %b: !rtensor.tensor<64x64xf32, fs=[1,2], ft=[1,1], replicas=2>) -> !rtensor.tensor<64x64xf32, fs=[2,2], ft=[1,1]> attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [2, 2, 1] : (!rtensor.tensor<64x64xf32, fs=[2,1], ft=[1,1], replicas=2>, !rtensor.tensor<64x64xf32, fs=[1,2], ft=[1,1], replicas=2>) -> !rtensor.tensor<64x64xf32, fs=[2,2], ft=[1,1]>
  func.return %c : !rtensor.tensor<64x64xf32, fs=[2,2], ft=[1,1]>
}
// CHECK: invalid.mlir:32:3: error: 'rtensor.op' op plan breaks a T10 constraint: memory per core is 20480 bytes, more than the 4096 bytes of SRAM on tiny4

// -----

// Every core needs work: F_op on an axis cannot exceed its extent.
func.func @extent(%a: !rtensor.tensor<8x16xf32, fs=[16,1], ft=[1,1]>, %b: !rtensor.tensor<16x12xf32, fs=[1,1], ft=[1,1], replicas=16>) -> !rtensor.tensor<8x12xf32, fs=[16,1], ft=[1,1]> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [16, 1, 1] : (!rtensor.tensor<8x16xf32, fs=[16,1], ft=[1,1]>, !rtensor.tensor<16x12xf32, fs=[1,1], ft=[1,1], replicas=16>) -> !rtensor.tensor<8x12xf32, fs=[16,1], ft=[1,1]>
  func.return %c : !rtensor.tensor<8x12xf32, fs=[16,1], ft=[1,1]>
}
// CHECK: invalid.mlir:41:3: error: 'rtensor.op' op plan breaks a T10 constraint: F_op on axis m is 16, more than its extent 8: some cores would get no work

// -----

// The types' spatial factors must be the op's F_op.
func.func @fs(%a: !rtensor.tensor<8x16xf32, fs=[2,4], ft=[1,4]>, %b: !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [2, 4, 2] : (!rtensor.tensor<8x16xf32, fs=[2,4], ft=[1,4]>, !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
  func.return %c : !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
}
// CHECK: invalid.mlir:50:3: error: 'rtensor.op' op fs of A on axis k (dimension 1) is 4, but F_op on k is 2

// -----

// Replicas follow from the plan: 4 cores share A, prod(f_t) = 4, so one ring.
func.func @replicas(%a: !rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,4], replicas=4>, %b: !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [2, 4, 2] : (!rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,4], replicas=4>, !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
  func.return %c : !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
}
// CHECK: invalid.mlir:59:3: error: 'rtensor.op' op A has replicas=4, but the plan gives 1 (cores sharing A's partition / prod(f_t))

// -----

// The padded shape follows from the plan: m = 10 on 4 core groups pads to 12.
func.func @padding(%a: !rtensor.tensor<10x16xf32, fs=[4,1], ft=[1,1], replicas=4>, %b: !rtensor.tensor<16x12xf32, fs=[1,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<10x12xf32, fs=[4,4], ft=[1,1], padded=12x12> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [4, 4, 1] : (!rtensor.tensor<10x16xf32, fs=[4,1], ft=[1,1], replicas=4>, !rtensor.tensor<16x12xf32, fs=[1,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<10x12xf32, fs=[4,4], ft=[1,1], padded=12x12>
  func.return %c : !rtensor.tensor<10x12xf32, fs=[4,4], ft=[1,1], padded=12x12>
}
// CHECK: invalid.mlir:68:3: error: 'rtensor.op' op A has padded shape 10x16, but the plan pads it to 12x16

// -----

func.func @arity(%a: !rtensor.tensor<8x16xf32>, %b: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [1, 1] : (!rtensor.tensor<8x16xf32>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32>
  func.return %c : !rtensor.tensor<8x12xf32>
}
// CHECK: invalid.mlir:76:3: error: 'rtensor.op' op F_op has 2 entries but the expression has 3 axes (m, n, k)

// -----

func.func @device(%a: !rtensor.tensor<8x16xf32>, %b: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32> attributes {irc.target = #irc.target<"ipu-mk3", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [1, 1, 1] : (!rtensor.tensor<8x16xf32>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32>
  func.return %c : !rtensor.tensor<8x12xf32>
}
// CHECK: error: 'rtensor.op' op unknown device 'ipu-mk3'; known devices: ipu-mk2, tiny16, tiny4, tiny8

// -----

func.func @cost(%a: !rtensor.tensor<8x16xf32>, %b: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32> attributes {irc.target = #irc.target<"tiny16", "roofline", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [1, 1, 1] : (!rtensor.tensor<8x16xf32>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32>
  func.return %c : !rtensor.tensor<8x12xf32>
}
// CHECK: error: 'rtensor.op' op unknown cost model 'roofline'; known cost models: seed003, t10

// -----

func.func @extents(%a: !rtensor.tensor<8x16xf32>, %b: !rtensor.tensor<15x12xf32>) -> !rtensor.tensor<8x12xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [1, 1, 1] : (!rtensor.tensor<8x16xf32>, !rtensor.tensor<15x12xf32>) -> !rtensor.tensor<8x12xf32>
  func.return %c : !rtensor.tensor<8x12xf32>
}
// CHECK: error: 'rtensor.op' op 'C[m,n] += A[m,k] * B[k,n]': axis 'k' has extent 16 in A (dim 1) but 15 in B (dim 0)

// -----

func.func @element(%a: !rtensor.tensor<8x16xf16>, %b: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = [1, 1, 1] : (!rtensor.tensor<8x16xf16>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32>
  func.return %c : !rtensor.tensor<8x12xf32>
}
// CHECK: error: 'rtensor.op' op element type mismatch: A is f16 but the result is f32

// -----

// A conv input dimension h+r needs one factor per term.
func.func @terms(%x: !rtensor.tensor<1x1x6x6xf32>, %w: !rtensor.tensor<1x1x3x3xf32>) -> !rtensor.tensor<1x1x4x4xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %y = rtensor.op "Y[n,f,h,w] += X[n,c,h+r,w+s] * W[f,c,r,s]" (%x, %w) F_op = [1, 1, 1, 1, 1, 1, 1] : (!rtensor.tensor<1x1x6x6xf32>, !rtensor.tensor<1x1x3x3xf32>) -> !rtensor.tensor<1x1x4x4xf32>
  func.return %y : !rtensor.tensor<1x1x4x4xf32>
}
// CHECK: error: 'rtensor.op' op X dimension 2 is indexed by 'h+r' (2 term(s)) but its type gives 1 factor(s)

// -----

func.func @relayout_shape(%a: tensor<8x16xf32>) -> !rtensor.tensor<8x12xf32> {
  %0 = rtensor.relayout %a : tensor<8x16xf32> -> !rtensor.tensor<8x12xf32>
  func.return %0 : !rtensor.tensor<8x12xf32>
}
// CHECK: error: 'rtensor.relayout' op relayout keeps the global shape, but the source is 8x16 and the result 8x12

// -----

func.func @relayout_element(%a: tensor<8x16xf32>) -> !rtensor.tensor<8x16xf16> {
  %0 = rtensor.relayout %a : tensor<8x16xf32> -> !rtensor.tensor<8x16xf16>
  func.return %0 : !rtensor.tensor<8x16xf16>
}
// CHECK: error: 'rtensor.relayout' op relayout keeps the element type, but the source has f32 and the result f16

// -----

func.func @relayout_host(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = rtensor.relayout %a : tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %0 : tensor<8x16xf32>
}
// CHECK: error: 'rtensor.relayout' op relayout between two builtin tensors moves nothing; one side must be an !rtensor.tensor
