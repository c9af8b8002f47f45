// Verifier errors of per-core affine maps (run from ../spmd.mlir).

func.func @results(%x: tensor<2x8xf32>) {
  %X = device.alloc {name = "X", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.load %x into %X {origins = affine_map<(d0) -> (d0)>} : tensor<2x8xf32>, !device.buffer<1x4xf32>
  func.return
}
// CHECK: error: 'device.load' op origins has 1 results; expected 2

// -----

func.func @dims(%x: tensor<2x8xf32>) {
  %X = device.alloc {name = "X", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.load %x into %X {origins = affine_map<(d0, d1) -> (d0, d1)>} : tensor<2x8xf32>, !device.buffer<1x4xf32>
  func.return
}
// CHECK: error: 'device.load' op origins must be a map of the core id alone, (d0) -> (...), got (d0, d1) -> (d0, d1)

// -----

func.func @not_a_ring() {
  %X = device.alloc {name = "X", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %R = device.alloc {name = "R", cores = 4 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  device.shift %X through %R {source = affine_map<(d0) -> (d0 floordiv 2)>} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
  func.return
}
// CHECK: error: 'device.shift' op source is not a permutation of the cores 0..3: core 2's buffer is sent to no core

// -----

func.func @groups() {
  %Y = device.alloc {name = "Y", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.reduce %Y {group = affine_map<(d0) -> (d0 floordiv 3)>, replicas = 2 : i64, combiner = "+=", kind = "matmul", roles = {}, out_step_elems = 4 : i64, out_resident_elems = 4 : i64, cores = 4 : i64} : !device.buffer<1x4xf32>
  func.return
}
// CHECK: error: 'device.reduce' op every group must hold replicas=2 cores, but one holds 3

// -----

func.func @window() {
  %Y = device.alloc {name = "Y", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %A = device.alloc {name = "A", cores = 4 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  device.vector "Y[i,j] = relu(A[i,j])" %Y, (%A) {tiles = array<i64: 1, 2>, cores = 4 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, d0)>], kind = "elementwise", roles = {}, step = 0 : i64} : !device.buffer<1x4xf32>, (!device.buffer<1x4xf32>)
  func.return
}
// CHECK: error: 'device.vector' op core 3: the window of A at [0, 3] with extent [1, 2] lies outside its buffer of shape [1, 4]

// -----

func.func @both_forms() {
  %X = device.alloc {name = "X", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %Y = device.alloc {name = "Y", cores = 4 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<2x2xf32>
  device.relayout %X into %Y {shape = array<i64: 2, 8>, origins = affine_map<(d0) -> (0, d0 * 2)>, source_origins = affine_map<(d0) -> (0, 0)>, source_group = affine_map<(d0) -> (d0)>, pieces = affine_map<(d0, d1) -> (d1, 0, 0, d1, 0)>, piece_count = 2 : i64, piece_shape = array<i64: 1, 2>, bytes = 16 : i64, barriers = 2 : i64} : !device.buffer<1x4xf32>, !device.buffer<2x2xf32>
  func.return
}
// CHECK: error: 'device.relayout' op a relayout states either its pieces (pieces, piece_count, piece_shape) or where the source tiles lie (source_origins, source_group), not both

// -----

func.func @piece_columns() {
  %X = device.alloc {name = "X", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %Y = device.alloc {name = "Y", cores = 4 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<2x2xf32>
  device.relayout %X into %Y {shape = array<i64: 2, 8>, origins = affine_map<(d0) -> (0, d0 * 2)>, pieces = affine_map<(d0, d1) -> (d1, 0, 0)>, piece_count = 2 : i64, piece_shape = array<i64: 1, 2>, bytes = 16 : i64, barriers = 2 : i64} : !device.buffer<1x4xf32>, !device.buffer<2x2xf32>
  func.return
}
// CHECK: error: 'device.relayout' op pieces has 3 results; expected 5 (source core, source offsets, destination offsets)
