// RUN: irc-opt %s --split-input-file --verify-diagnostics -p rtensor-check | filecheck %s

// rtensor-check: what the rtensor verifier cannot know without a chip. Each op's
// plan against the T10 constraints on the module's #irc.target, its types' replicas
// and padding, and its idle plan's bytes and setup cycles.

// T10 §4.2: prod(f_t) of a tensor must divide the number of cores sharing its partition.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @ft_divides(%a: !rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,8]>, %b: !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 2, 4, 2> : (!rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,8]>, !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
    func.return %c : !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
  }
}
// CHECK: invalid.mlir:10:5: error: 'rtensor.op' op plan breaks a T10 constraint: prod(f_t of A)=8 does not divide the 4 cores sharing A's partition

// -----

// T10 §4.2: temporal factors of tensors sharing an axis must divide one another.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @ft_chain(%a: !rtensor.tensor<12x12xf32, fs=[2,2], ft=[1,3]>, %b: !rtensor.tensor<12x12xf32, fs=[2,3], ft=[2,1]>) -> !rtensor.tensor<12x12xf32, fs=[2,3], ft=[1,1], replicas=2> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 2, 3, 2> : (!rtensor.tensor<12x12xf32, fs=[2,2], ft=[1,3]>, !rtensor.tensor<12x12xf32, fs=[2,3], ft=[2,1]>) -> !rtensor.tensor<12x12xf32, fs=[2,3], ft=[1,1], replicas=2>
    func.return %c : !rtensor.tensor<12x12xf32, fs=[2,3], ft=[1,1], replicas=2>
  }
}
// CHECK: invalid.mlir:21:5: error: 'rtensor.op' op plan breaks a T10 constraint: temporal factors on axis k must divide one another, but A has 3, B has 2

// -----

// Cores used (prod F_op = 32) must not exceed the device's 16.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @cores(%a: !rtensor.tensor<8x16xf32, fs=[4,2], ft=[1,1], replicas=4>, %b: !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1], replicas=2> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 4, 4, 2> : (!rtensor.tensor<8x16xf32, fs=[4,2], ft=[1,1], replicas=4>, !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1], replicas=2>
    func.return %c : !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1], replicas=2>
  }
}
// CHECK: invalid.mlir:32:5: error: 'rtensor.op' op plan breaks a T10 constraint: plan uses 32 cores, device tiny16 has 16

// -----

// Memory per core (partitions + rotation buffers) must fit in SRAM (4 KiB on tiny4).
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  func.func @memory(%a: !rtensor.tensor<64x64xf32, fs=[2,1], ft=[1,1], replicas=2>, %b: !rtensor.tensor<64x64xf32, fs=[1,2], ft=[1,1], replicas=2>) -> !rtensor.tensor<64x64xf32, fs=[2,2], ft=[1,1]> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 2, 2, 1> : (!rtensor.tensor<64x64xf32, fs=[2,1], ft=[1,1], replicas=2>, !rtensor.tensor<64x64xf32, fs=[1,2], ft=[1,1], replicas=2>) -> !rtensor.tensor<64x64xf32, fs=[2,2], ft=[1,1]>
    func.return %c : !rtensor.tensor<64x64xf32, fs=[2,2], ft=[1,1]>
  }
}
// CHECK: invalid.mlir:43:5: error: 'rtensor.op' op plan breaks a T10 constraint: memory per core is 20480 bytes, more than the 4096 bytes of SRAM on tiny4

// -----

// Every core needs work: F_op on an axis cannot exceed its extent.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @extent(%a: !rtensor.tensor<8x16xf32, fs=[16,1], ft=[1,1]>, %b: !rtensor.tensor<16x12xf32, fs=[1,1], ft=[1,1], replicas=16>) -> !rtensor.tensor<8x12xf32, fs=[16,1], ft=[1,1]> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 16, 1, 1> : (!rtensor.tensor<8x16xf32, fs=[16,1], ft=[1,1]>, !rtensor.tensor<16x12xf32, fs=[1,1], ft=[1,1], replicas=16>) -> !rtensor.tensor<8x12xf32, fs=[16,1], ft=[1,1]>
    func.return %c : !rtensor.tensor<8x12xf32, fs=[16,1], ft=[1,1]>
  }
}
// CHECK: invalid.mlir:54:5: error: 'rtensor.op' op plan breaks a T10 constraint: F_op on axis m is 16, more than its extent 8: some cores would get no work

// -----

// Replicas follow from the plan: 4 cores share A, prod(f_t) = 4, so one ring.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @replicas(%a: !rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,4], replicas=4>, %b: !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 2, 4, 2> : (!rtensor.tensor<8x16xf32, fs=[2,2], ft=[1,4], replicas=4>, !rtensor.tensor<16x12xf32, fs=[2,4], ft=[1,1], replicas=2>) -> !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
    func.return %c : !rtensor.tensor<8x12xf32, fs=[2,4], ft=[1,1], replicas=2>
  }
}
// CHECK: invalid.mlir:65:5: error: 'rtensor.op' op A has replicas=4, but the plan gives 1 (cores sharing A's partition / prod(f_t))

// -----

// The padded shape follows from the plan: m = 10 on 4 core groups pads to 12.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @padding(%a: !rtensor.tensor<10x16xf32, fs=[4,1], ft=[1,1], replicas=4>, %b: !rtensor.tensor<16x12xf32, fs=[1,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<10x12xf32, fs=[4,4], ft=[1,1], padded=12x12> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 4, 4, 1> : (!rtensor.tensor<10x16xf32, fs=[4,1], ft=[1,1], replicas=4>, !rtensor.tensor<16x12xf32, fs=[1,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<10x12xf32, fs=[4,4], ft=[1,1], padded=12x12>
    func.return %c : !rtensor.tensor<10x12xf32, fs=[4,4], ft=[1,1], padded=12x12>
  }
}
// CHECK: invalid.mlir:76:5: error: 'rtensor.op' op A has padded shape 10x16, but the plan pads it to 12x16

// -----

// The idle annotation is checked against the plan: the setup cycles are recomputed.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @setup(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> {
    %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = array<i64: 2, 8, 1> {idle = #rtensor.idle<{W = [2,1]}, bytes = 128, setup = 999>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
    func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  }
}
// CHECK: invalid.mlir:87:5: error: 'rtensor.op' op idle plan says setup = 999 cycles, but gathering its slices costs 308 cycles on tiny16 under t10

// -----

// Idle bytes per core are recomputed from the idle factors.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @bytes(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> {
    %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = array<i64: 2, 8, 1> {idle = #rtensor.idle<{W = [2,1]}, bytes = 256, setup = 0>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
    func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  }
}
// CHECK: invalid.mlir:98:5: error: 'rtensor.op' op idle plan says bytes = 256, but its weights take 128 bytes per core at rest

// -----

// A device description written in full is used as it stands, without reading a device
// file: here a 16-core chip with 1 KiB of SRAM per core.
builtin.module attributes {irc.target = #irc.target<"tiny16-1152", "t10", {name = "tiny16-1152", description = "tiny16 with 1 KiB SRAM", cores = 16 : i64, cores_per_chip = 16 : i64, sram_bytes = 1024 : i64, clock_hz = 1.325000e+09 : f64, systolic = array<i64: 4, 4>, macs_per_cycle = 4 : i64, topology = "all-to-all", link_bytes_per_s = 5.500000e+09 : f64, shift_cycles_per_byte = 2.800000e-01 : f64, sync_cycles = 118 : i64, syncs_per_shift = 2 : i64, inter_chip_overhead = 1.250000e+00 : f64}>} {
  func.func @inline(%a: !rtensor.tensor<64x64xf32, fs=[4,1], ft=[1,1], replicas=4>, %b: !rtensor.tensor<64x64xf32, fs=[1,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<64x64xf32, fs=[4,4], ft=[1,1]> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 4, 4, 1> : (!rtensor.tensor<64x64xf32, fs=[4,1], ft=[1,1], replicas=4>, !rtensor.tensor<64x64xf32, fs=[1,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<64x64xf32, fs=[4,4], ft=[1,1]>
    func.return %c : !rtensor.tensor<64x64xf32, fs=[4,4], ft=[1,1]>
  }
}
// CHECK: invalid.mlir:110:5: error: 'rtensor.op' op plan breaks a T10 constraint: memory per core is {{[0-9]+}} bytes, more than the 1024 bytes of SRAM on tiny16-1152

// -----

// A written description must have every device field (checked at the op carrying it).
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {name = "tiny16", cores = 16 : i64}>} {
  func.func @partial(%a: !rtensor.tensor<8x16xf32>, %b: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 1, 1, 1> : (!rtensor.tensor<8x16xf32>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32>
    func.return %c : !rtensor.tensor<8x12xf32>
  }
}
// CHECK: invalid.mlir:119:1: error: 'builtin.module' op #irc.target of 'tiny16': missing field 'cores_per_chip'

// -----

// An empty description names a bundled device; an unknown name is an error.
builtin.module attributes {irc.target = #irc.target<"ipu-mk3", "t10", {}>} {
  func.func @device(%a: !rtensor.tensor<8x16xf32>, %b: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 1, 1, 1> : (!rtensor.tensor<8x16xf32>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32>
    func.return %c : !rtensor.tensor<8x12xf32>
  }
}
// CHECK: invalid.mlir:130:1: error: 'builtin.module' op unknown device 'ipu-mk3'; known devices: ipu-mk2, {{.*}}tiny4, tiny8

// -----

builtin.module attributes {irc.target = #irc.target<"tiny16", "roofline", {}>} {
  func.func @cost(%a: !rtensor.tensor<8x16xf32>, %b: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32> {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 1, 1, 1> : (!rtensor.tensor<8x16xf32>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32>
    func.return %c : !rtensor.tensor<8x12xf32>
  }
}
// CHECK: invalid.mlir:140:1: error: 'builtin.module' op unknown cost model 'roofline'; known cost models: engdesign, igo, mtia, seed003, t10

// -----

// Without a target there is nothing to check against.
func.func @untargeted(%a: !rtensor.tensor<8x16xf32>, %b: !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32> {
  %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 1, 1, 1> : (!rtensor.tensor<8x16xf32>, !rtensor.tensor<16x12xf32>) -> !rtensor.tensor<8x12xf32>
  func.return %c : !rtensor.tensor<8x12xf32>
}
// CHECK: invalid.mlir:152:3: error: 'rtensor.op' op the module has no irc.target; run rtensor-partition{device=... cost=...} (or irc-target{device=... cost=...}) first

// -----

// A function's own target is the nearest one: the same op fits tiny16 but not tiny4.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @nearest(%a: !rtensor.tensor<8x16xf32, fs=[4,1], ft=[1,1], replicas=4>, %b: !rtensor.tensor<16x12xf32, fs=[1,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1]> attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
    %c = rtensor.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) F_op = array<i64: 4, 4, 1> : (!rtensor.tensor<8x16xf32, fs=[4,1], ft=[1,1], replicas=4>, !rtensor.tensor<16x12xf32, fs=[1,4], ft=[1,1], replicas=4>) -> !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1]>
    func.return %c : !rtensor.tensor<8x12xf32, fs=[4,4], ft=[1,1]>
  }
}
// CHECK: invalid.mlir:162:5: error: 'rtensor.op' op plan breaks a T10 constraint: plan uses 16 cores, device tiny4 has 4

// -----

// A padded reduction axis whose padded points would change the fold (exp(0) = 1 where a
// load pads j with zeros): the planner never pads it, and a stated plan that does is
// refused with the axis and extents (the compute-shift lowering could not run it).
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  func.func @padded_sum(%x: !rtensor.tensor<4x7xf32, fs=[1,4], ft=[1,1], padded=4x8>) -> !rtensor.tensor<4xf32, fs=[1], ft=[1], replicas=4> {
    %y = rtensor.op "Y[i] += exp(X[i,j])" (%x) F_op = array<i64: 1, 4> : (!rtensor.tensor<4x7xf32, fs=[1,4], ft=[1,1], padded=4x8>) -> !rtensor.tensor<4xf32, fs=[1], ft=[1], replicas=4>
    func.return %y : !rtensor.tensor<4xf32, fs=[1], ft=[1], replicas=4>
  }
}
// CHECK: invalid.mlir:175:5: error: 'rtensor.op' op plan breaks a T10 constraint: the plan pads reduction axis j from 7 to 8, and the padded points would change the fold (+= over j); choose F_op and f_t whose product on j divides 7

// -----

// The same padding of a sum of a zero-preserving function of a read (the cast of a
// padded zero is zero) keeps the fold: the plan passes.
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  func.func @padded_cast_sum(%x: !rtensor.tensor<4x7xf32, fs=[1,4], ft=[1,1], padded=4x8>) -> !rtensor.tensor<4xf32, fs=[1], ft=[1], replicas=4> {
    %y = rtensor.op "Y[i] += cast(X[i,j]) * 0.5" (%x) F_op = array<i64: 1, 4> : (!rtensor.tensor<4x7xf32, fs=[1,4], ft=[1,1], padded=4x8>) -> !rtensor.tensor<4xf32, fs=[1], ft=[1], replicas=4>
    func.return %y : !rtensor.tensor<4xf32, fs=[1], ft=[1], replicas=4>
  }
}
// CHECK: func.func @padded_cast_sum
// CHECK-NEXT: %y = rtensor.op "Y[i] += cast(X[i,j]) * 0.5" (%x) F_op = array<i64: 1, 4>

// -----

// A plan that keeps every constraint (its idle plan too) passes unchanged. W rests with
// k cut in two (each of the 2 cores sharing W's partition keeps half) and the setup
// gathers the other half.
builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  func.func @valid(%x: !rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, %w: !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]> {
    %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = array<i64: 2, 8, 1> {idle = #rtensor.idle<{W = [2,1]}, bytes = 128, setup = 308>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
    func.return %h : !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
  }
}
// CHECK: builtin.module attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
// CHECK-NEXT: func.func @valid
// CHECK-NEXT: %h = rtensor.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w) F_op = array<i64: 2, 8, 1> {idle = #rtensor.idle<{W = [2,1]}, bytes = 128, setup = 308>} : (!rtensor.tensor<32x32xf16, fs=[2,1], ft=[1,1], replicas=8>, !rtensor.tensor<32x32xf16, fs=[1,8], ft=[1,1], replicas=2>) -> !rtensor.tensor<32x32xf16, fs=[2,8], ft=[1,1]>
