// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @bytes() {
  %X = device.alloc {name = "X", cores = 2 : i64, bytes = 20 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  func.return
}
// CHECK: invalid.mlir:4:3: error: 'device.alloc' op buffer X declares 20 bytes but !device.buffer<1x4xf32> takes 16

// -----

func.func @origins(%x: tensor<2x4xf32>) {
  %X = device.alloc {name = "X", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.load %x into %X {origins = array<i64: 0, 0, 1>} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  func.return
}
// CHECK: invalid.mlir:13:3: error: 'device.load' op origins has 3 entries; expected 2 (one row for all cores) or 2 x 2 cores = 4

// -----

func.func @permutation() {
  %X = device.alloc {name = "X", cores = 3 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %R = device.alloc {name = "R", cores = 3 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  device.shift %X through %R {source = array<i64: 1, 1, 0>} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
  func.return
}
// CHECK: error: 'device.shift' op source is not a permutation of the cores 0..2: core 2's buffer is sent to no core

// -----

func.func @no_buffer() {
  %X = device.alloc {name = "X", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %R = device.alloc {name = "R", cores = 2 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  device.shift %X through %R {source = array<i64: 1, 2, 0>} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
  func.return
}
// CHECK: error: 'device.shift' op the shift moves data on 3 cores but buffer lives on cores 0..1: core 2 has no buffer

// -----

func.func @window() {
  %C = device.alloc {name = "C", cores = 2 : i64, bytes = 32 : i64, offset = 0 : i64} : !device.buffer<2x4xf32>
  %A = device.alloc {name = "A", cores = 2 : i64, bytes = 16 : i64, offset = 32 : i64} : !device.buffer<2x2xf32>
  %B = device.alloc {name = "B", cores = 2 : i64, bytes = 32 : i64, offset = 48 : i64} : !device.buffer<2x4xf32>
  device.mma "C[m,n] += A[m,k] * B[k,n]" %C, (%A, %B) {tiles = array<i64: 2, 4, 2>, cores = 2 : i64, windows = [array<i64: 0, 0>, array<i64: 0, 0, 0, 1>, array<i64: 0, 0>], kind = "matmul", roles = {}, step = 0 : i64} : !device.buffer<2x4xf32>, (!device.buffer<2x2xf32>, !device.buffer<2x4xf32>)
  func.return
}
// CHECK: error: 'device.mma' op core 1: the window of A at [0, 1] with extent [2, 2] lies outside its buffer of shape [2, 2]

// -----

func.func @not_a_contraction() {
  %Y = device.alloc {name = "Y", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %X = device.alloc {name = "X", cores = 2 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  device.mma "Y[i,j] = relu(X[i,j])" %Y, (%X) {tiles = array<i64: 1, 4>, cores = 2 : i64, windows = [array<i64: 0, 0>, array<i64: 0, 0>], kind = "unary", roles = {}, step = 0 : i64} : !device.buffer<1x4xf32>, (!device.buffer<1x4xf32>)
  func.return
}
// CHECK: error: 'device.mma' op device.mma computes a product of two plainly indexed reads with '+=' or '=', not 'Y[i,j] = relu(X[i,j])'; use device.vector

// -----

func.func @groups() {
  %C = device.alloc {name = "C", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.reduce %C {group = array<i64: 0, 1, 2>, replicas = 2 : i64, combiner = "+=", kind = "matmul", roles = {}, out_step_elems = 4 : i64, out_resident_elems = 4 : i64, cores = 2 : i64} : !device.buffer<1x4xf32>
  func.return
}
// CHECK: error: 'device.reduce' op group has 3 entries, but the reduction runs on 2 cores

// -----

func.func @rounded_wider() {
  %C = device.alloc {name = "C", cores = 2 : i64, bytes = 8 : i64, offset = 0 : i64} : !device.buffer<1x4xf16>
  %R = device.reduce %C {group = array<i64: 0, 1>, replicas = 1 : i64, combiner = "+=", kind = "matmul", roles = {}, out_step_elems = 4 : i64, out_resident_elems = 4 : i64, cores = 2 : i64} : !device.buffer<1x4xf16> -> !device.buffer<1x4xf32>
  func.return
}
// CHECK: error: 'device.reduce' op the rounded result !device.buffer<1x4xf32> is rounded in place, so it cannot be wider than the accumulator !device.buffer<1x4xf16>

// -----

func.func @rounded_shape() {
  %C = device.alloc {name = "C", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %R = device.reduce %C {group = array<i64: 0, 1>, replicas = 1 : i64, combiner = "+=", kind = "matmul", roles = {}, out_step_elems = 4 : i64, out_resident_elems = 4 : i64, cores = 2 : i64} : !device.buffer<1x4xf32> -> !device.buffer<4xf16>
  func.return
}
// CHECK: error: 'device.reduce' op the rounded result !device.buffer<4xf16> must have the accumulator's shape, !device.buffer<1x4xf32>
