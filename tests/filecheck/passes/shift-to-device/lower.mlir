// RUN: irc-opt %s -p shift-to-device | filecheck %s
// RUN: irc-opt %s -p shift-to-device | irc-opt --print-op-generic | irc-opt | filecheck %s
// RUN: irc-opt %s -p shift-to-device,device-alloc | irc-run - --inputs %S/../Inputs/matmul.npz --report | filecheck %s --check-prefix=EXEC

// The aligned matmul kernel of rotation-align/align.mlir: 8 cores, 4 steps; A shifts
// after every step, B after the second (through receive buffers), one sync per shift.
func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
  %c = shift.kernel "C[m,n] += A[m,k] * B[k,n]"(%a, %b) {grid = array<i64: 2, 4, 1>} : (tensor<8x12xf32>, tensor<12x16xf32>) -> tensor<8x16xf32> {
    shift.ring "C" {temporal = array<i64: 1, 1, 1>}
    shift.ring "A" {temporal = array<i64: 1, 1, 4>}
    shift.ring "B" {temporal = array<i64: 1, 1, 2>}
    shift.loop "k" attributes {trips = 2 : i64, stride = 2 : i64, rotating = ["A", "B"], start = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>} {
      shift.loop "k" attributes {trips = 2 : i64, stride = 1 : i64, rotating = ["A"], start = array<i64: 0, 1, 0, 1, 0, 1, 0, 1>} {
        shift.compute
      }
    }
  }
  func.return %c : tensor<8x16xf32>
}
// CHECK:      func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x16xf32>) -> tensor<8x16xf32> attributes {irc.target = #irc.target<"tiny16", "t10", {}>} {
// CHECK-NEXT:   %C = device.alloc {name = "k1.C", cores = 8 : i64, bytes = 64 : i64, offset = -1 : i64} : !device.buffer<4x4xf32>
// CHECK-NEXT:   %A = device.alloc {name = "k1.A", cores = 8 : i64, bytes = 48 : i64, offset = -1 : i64} : !device.buffer<4x3xf32>
// CHECK-NEXT:   %A_recv = device.alloc {name = "k1.A.recv", cores = 8 : i64, bytes = 48 : i64, offset = -1 : i64} : !device.buffer<4x3xf32>
// CHECK-NEXT:   %B = device.alloc {name = "k1.B", cores = 8 : i64, bytes = 96 : i64, offset = -1 : i64} : !device.buffer<6x4xf32>
// CHECK-NEXT:   %B_recv = device.alloc {name = "k1.B.recv", cores = 8 : i64, bytes = 96 : i64, offset = -1 : i64} : !device.buffer<6x4xf32>
// initial placement: core (m, n) holds A's k-partition (n + 2m) mod 4, skewed like Cannon's
// algorithm; every per-core value is an affine map of the core id d0 (SPMD)
// CHECK-NEXT:   device.load %a into %A {origins = affine_map<(d0) -> (((d0 floordiv 4) * 4), ((((((d0 floordiv 2) mod 2) + ((d0 floordiv 4) mod 2)) mod 2) * 6) + ((d0 mod 2) * 3)))>} : tensor<8x12xf32>, !device.buffer<4x3xf32>
// CHECK-NEXT:   device.load %b into %B {origins = affine_map<(d0) -> ({{.*}})>} : tensor<12x16xf32>, !device.buffer<6x4xf32>
// CHECK-NEXT:   device.fill %C {value = 0.000000e+00 : f64} : !device.buffer<4x4xf32>
// CHECK-NEXT:   device.mma "C[m,n] += A[m,k] * B[k,n]" %C, (%A, %B) {tiles = array<i64: 4, 4, 3>, cores = 8 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> ({{.*}})>], kind = "matmul", roles = {batch = 1 : i64, m = 4 : i64, n = 4 : i64, k = 3 : i64}, step = 0 : i64}
// CHECK-NEXT:   device.shift %A through %A_recv {source = affine_map<(d0) -> ({{.*}})>}
// CHECK-NEXT:   device.sync {cores = 8 : i64}
// CHECK-NEXT:   device.mma {{.*}} step = 1 : i64}
// CHECK-NEXT:   device.shift %A through %A_recv {source = affine_map<(d0) -> ({{.*}})>}
// CHECK-NEXT:   device.sync {cores = 8 : i64}
// CHECK-NEXT:   device.shift %B through %B_recv {source = affine_map<(d0) -> ({{.*}})>}
// CHECK-NEXT:   device.sync {cores = 8 : i64}
// CHECK-NEXT:   device.mma {{.*}} step = 2 : i64}
// CHECK-NEXT:   device.shift %A through %A_recv
// CHECK-NEXT:   device.sync
// CHECK-NEXT:   device.mma {{.*}} step = 3 : i64}
// CHECK-NEXT:   device.reduce %C {group = affine_map<(d0) -> ((((d0 floordiv 4) * 4) + (d0 mod 4)))>, replicas = 1 : i64, combiner = "+="
// CHECK-NEXT:   %c = device.store %C {origins = affine_map<(d0) -> (((d0 floordiv 4) * 4), ((d0 mod 4) * 4))>, group = affine_map<(d0) -> ((((d0 floordiv 4) * 4) + (d0 mod 4)))>, fill = 0.000000e+00 : f64} : !device.buffer<4x4xf32> -> tensor<8x16xf32>
// CHECK:        device.free %B_recv : !device.buffer<6x4xf32>
// CHECK-NEXT:   func.return %c : tensor<8x16xf32>

// 4 shift events of 48/48/96/48 bytes at 0.28 cycles/byte, 4 x 236 sync cycles;
// the planner predicts the same kernel time (see tests/lowering)
// EXEC:      chip time on tiny16 (t10 cost model)
// EXEC:        shift   67 cycles
// EXEC-NEXT:   sync   944 cycles
// EXEC:      peak SRAM per core: 352 of 65,536 bytes
// EXEC:      utilisation: 8 of 16 cores, {{.*}} 4 compute steps
// EXEC:      result0: tensor<8x16, float32>
// EXEC-NEXT: {{\[\[}} -2.  -7.  -2. ...  13.  -2.  -2.]
// EXEC-NEXT:  [-10.   9.   3. ...   7.  -9. -10.]
