// RUN: irc-opt %s | filecheck %s
// RUN: %irc-roundtrip | filecheck %s
// RUN: irc-run %s --inputs %S/Inputs/ring.npz --report | filecheck %s --check-prefix=EXEC

// Two cores each hold half of x; one rotation around a ring of two cores swaps them, and
// a sum reduction of y = x_held + x_received gives every core the total.
func.func @ring(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %X = device.alloc {name = "X", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %R = device.alloc {name = "X.recv", cores = 2 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  %Y = device.alloc {name = "Y", cores = 2 : i64, bytes = 16 : i64, offset = 32 : i64} : !device.buffer<1x4xf32>
  device.load %x into %X {origins = array<i64: 0, 0, 1, 0>} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  device.fill %Y {value = 0.000000e+00 : f64} : !device.buffer<1x4xf32>
  device.vector "Y[i,j] = Y0[i,j] + X[i,j]" %Y, (%Y, %X) {tiles = array<i64: 1, 4>, cores = 2 : i64, windows = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], kind = "elementwise", roles = {}, step = 0 : i64} : !device.buffer<1x4xf32>, (!device.buffer<1x4xf32>, !device.buffer<1x4xf32>)
  device.shift %X through %R {source = array<i64: 1, 0>} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
  device.sync {cores = 2 : i64}
  device.vector "Y[i,j] = Y0[i,j] + X[i,j]" %Y, (%Y, %X) {tiles = array<i64: 1, 4>, cores = 2 : i64, windows = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], kind = "elementwise", roles = {}, step = 1 : i64} : !device.buffer<1x4xf32>, (!device.buffer<1x4xf32>, !device.buffer<1x4xf32>)
  %y = device.store %Y {origins = array<i64: 0, 0, 1, 0>, group = array<i64: 0, 1>, fill = 0.000000e+00 : f64} : !device.buffer<1x4xf32> -> tensor<2x4xf32>
  device.free %X : !device.buffer<1x4xf32>
  device.free %R : !device.buffer<1x4xf32>
  device.free %Y : !device.buffer<1x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @ring(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
// CHECK-NEXT:   %X = device.alloc {name = "X", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
// CHECK:        device.load %x into %X {origins = array<i64: 0, 0, 1, 0>} : tensor<2x4xf32>, !device.buffer<1x4xf32>
// CHECK-NEXT:   device.fill %Y {value = 0.000000e+00 : f64} : !device.buffer<1x4xf32>
// CHECK-NEXT:   device.vector "Y[i,j] = Y0[i,j] + X[i,j]" %Y, (%Y, %X) {tiles = array<i64: 1, 4>, cores = 2 : i64, windows = [array<i64: 0, 0>, array<i64: 0, 0>, array<i64: 0, 0>], kind = "elementwise", roles = {}, step = 0 : i64}
// CHECK-NEXT:   device.shift %X through %R {source = array<i64: 1, 0>} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
// CHECK-NEXT:   device.sync {cores = 2 : i64}
// CHECK:        %y = device.store %Y {origins = array<i64: 0, 0, 1, 0>, group = array<i64: 0, 1>, fill = 0.000000e+00 : f64} : !device.buffer<1x4xf32> -> tensor<2x4xf32>
// CHECK:        device.free %Y : !device.buffer<1x4xf32>

// x = [[1,2,3,4],[10,20,30,40]]: both rows become the column sums
// EXEC:      chip time on tiny4 (t10 cost model)
// EXEC:        shift            4 cycles
// EXEC:        sync           236 cycles
// EXEC:      peak SRAM per core: 48 of 4,096 bytes
// EXEC:      utilisation: 2 of 4 cores, {{.*}} 2 compute steps
// EXEC:      result0: tensor<2x4, float32>
// EXEC-NEXT: {{\[\[}}11. 22. 33. 44.]
// EXEC-NEXT:  [11. 22. 33. 44.]]
