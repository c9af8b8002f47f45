// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @grid() {
  %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 8192 : i64, grid = array<i64: 2>} : !mtia.cb<64x64xi8>
  func.return
}
// CHECK: invalid.mlir:4:3: error: 'mtia.cb_init' op grid must be [rows, cols] of positive integers, got [2]

// -----

func.func @origin(%x: tensor<128x128xi8>) {
  %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64xi8>
  mtia.dma %x into %a {origin = affine_map<(d0) -> (d0 * 64, 0)>, block = array<i64: 64, 32>, multicast = "row", level = "sram"} : tensor<128x128xi8>, !mtia.cb<64x64xi8>
  func.return
}
// CHECK: error: 'mtia.dma' op origin must be an affine map of the PE's (row, column): (d0, d1) -> (...), got (d0) -> ((d0 * 64), 0)

// -----

func.func @multicast(%x: tensor<128x128xi8>) {
  %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64xi8>
  mtia.dma %x into %a {origin = affine_map<(d0, d1) -> (d0 * 64, 0)>, block = array<i64: 64, 32>, multicast = "diagonal", level = "sram"} : tensor<128x128xi8>, !mtia.cb<64x64xi8>
  func.return
}
// CHECK: error: 'mtia.dma' op multicast must be one of row, column, none, got 'diagonal'

// -----

func.func @block(%x: tensor<128x128xi8>) {
  %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64xi8>
  mtia.dma %x into %a {origin = affine_map<(d0, d1) -> (d0 * 64, 0)>, block = array<i64: 48, 32>, multicast = "row", level = "sram"} : tensor<128x128xi8>, !mtia.cb<64x64xi8>
  func.return
}
// CHECK: error: 'mtia.dma' op block [48, 32] does not tile the slice [64, 64]

// -----

func.func @accumulators() {
  %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64xi8>
  %b = mtia.cb_init {name = "B", id = 1 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64xi8>
  %acc = mtia.mml %a, %b {b_transposed = false} : !mtia.cb<64x64xi8>, !mtia.cb<64x64xi8> -> !mtia.acc<64x64xf32>
  func.return
}
// CHECK: error: 'mtia.mml' op products of i8 accumulate in i32, not f32

// -----

func.func @tiles() {
  %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<32x64xi8>
  %b = mtia.cb_init {name = "B", id = 1 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64xi8>
  %acc = mtia.mml %a, %b {b_transposed = false} : !mtia.cb<32x64xi8>, !mtia.cb<64x64xi8> -> !mtia.acc<32x64xi32>
  func.return
}
// CHECK: error: 'mtia.mml' op a PE's product must be in 64x64 tiles and 32-wide k steps, got m=32 n=64 k=64

// -----

func.func @chain() {
  %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 8192 : i64, grid = array<i64: 3, 3>} : !mtia.cb<64x64xi8>
  %b = mtia.cb_init {name = "B", id = 1 : i64, depth = 8192 : i64, grid = array<i64: 3, 3>} : !mtia.cb<64x64xi8>
  %acc = mtia.mml %a, %b {b_transposed = false} : !mtia.cb<64x64xi8>, !mtia.cb<64x64xi8> -> !mtia.acc<64x64xi32>
  %sum = mtia.reduce %acc {direction = "west-east", chain = 2 : i64} : !mtia.acc<64x64xi32>
  func.return
}
// CHECK: error: 'mtia.reduce' op chains of 2 PEs do not divide the 3 PEs along west-east

// -----

func.func @gather_offsets(%t: tensor<50x16xf32>, %idx: tensor<64xi64>, %off: tensor<9xi64>) {
  %rows = mtia.cb_init {name = "t", id = 0 : i64, depth = 1024 : i64, grid = array<i64: 1, 4>} : !mtia.cb<16x16xf32>
  mtia.gather %t, %idx, %off into %rows {first = affine_map<(d0, d1) -> (d1 * 2)>, samples = 2 : i64, tables = array<i64: 30, 20>, batch = 8 : i64, level = "sram"} : tensor<50x16xf32>, tensor<64xi64>, tensor<9xi64>, !mtia.cb<16x16xf32>
  func.return
}
// CHECK: error: 'mtia.gather' op 2 table(s) x batch 8 = 16 bags need 16 or 17 offsets, got 9

// -----

func.func @gather_rows(%t: tensor<50x16xf32>, %idx: tensor<64xi64>, %off: tensor<17xi64>) {
  %rows = mtia.cb_init {name = "t", id = 0 : i64, depth = 1024 : i64, grid = array<i64: 1, 4>} : !mtia.cb<16x16xf32>
  mtia.gather %t, %idx, %off into %rows {first = affine_map<(d0, d1) -> (d1 * 2)>, samples = 2 : i64, tables = array<i64: 30, 30>, batch = 8 : i64, level = "sram"} : tensor<50x16xf32>, tensor<64xi64>, tensor<17xi64>, !mtia.cb<16x16xf32>
  func.return
}
// CHECK: error: 'mtia.gather' op the tables' rows add up to 60, but the table has 50

// -----

func.func @pool_shape(%t: tensor<50x16xf32>, %idx: tensor<64xi64>, %off: tensor<17xi64>) {
  %rows = mtia.cb_init {name = "t", id = 0 : i64, depth = 1024 : i64, grid = array<i64: 1, 4>} : !mtia.cb<16x16xf32>
  mtia.gather %t, %idx, %off into %rows {first = affine_map<(d0, d1) -> (d1 * 2)>, samples = 2 : i64, tables = array<i64: 30, 20>, batch = 8 : i64, level = "sram"} : tensor<50x16xf32>, tensor<64xi64>, tensor<17xi64>, !mtia.cb<16x16xf32>
  %pooled = mtia.pool %rows {mode = "sum"} : !mtia.cb<16x16xf32> -> !mtia.acc<2x16xf32>
  func.return
}
// CHECK: error: 'mtia.pool' op a PE pools 2 sample(s) of 2 table(s) of 16 elements: the result must be 2x32, got 2x16

// -----

func.func @simd_homes(%y: tensor<8x32xf32>) {
  %z = mtia.simd "Z[b,e] = relu(Y[b,e])" (%y) {homes = ["sram"], pes = 64 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32>
  func.return
}
// CHECK: error: 'mtia.simd' op homes must name the level of the output and of each of the 1 input(s): 2 strings

// -----

func.func @shift_permutation(%w: tensor<16x8xf32>) {
  %b = mtia.alloc {name = "B", pes = 4 : i64, offset = 0 : i64} : !mtia.tile<4x8xf32>
  %r = mtia.alloc {name = "B.recv", pes = 4 : i64, offset = 128 : i64} : !mtia.tile<4x8xf32>
  mtia.shift %b through %r {source = affine_map<(d0) -> (d0 floordiv 2)>} : !mtia.tile<4x8xf32>, !mtia.tile<4x8xf32>
  func.return
}
// CHECK: error: 'mtia.shift' op source is not a permutation of the PEs 0..3: PE 2's tile is sent to no PE

// -----

func.func @step_window(%w: tensor<16x8xf32>) {
  %c = mtia.alloc {name = "C", pes = 4 : i64, offset = 0 : i64, fill = 0.0 : f64} : !mtia.tile<8x8xf32>
  %b = mtia.alloc {name = "B", pes = 4 : i64, offset = 256 : i64} : !mtia.tile<4x8xf32>
  mtia.step "C[m,n] += A[m,k] * B[k,n]" %c, (%c, %b) {tiles = array<i64: 8, 8, 4>, pes = 4 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (d0, 0)>], kind = "matmul", roles = {batch = 1 : i64, m = 8 : i64, n = 8 : i64, k = 4 : i64}, step = 0 : i64} : !mtia.tile<8x8xf32>, (!mtia.tile<8x8xf32>, !mtia.tile<4x8xf32>)
  func.return
}
// CHECK: error: 'mtia.step' op PE 1: the window of B at [1, 0] with extent [4, 8] lies outside its tile of shape [4, 8]

// -----

func.func @combine_groups(%w: tensor<16x8xf32>) {
  %c = mtia.alloc {name = "C", pes = 4 : i64, offset = 0 : i64, fill = 0.0 : f64} : !mtia.tile<8x8xf32>
  mtia.combine %c {group = affine_map<(d0) -> (d0 floordiv 3)>, replicas = 2 : i64, combiner = "+=", kind = "matmul", roles = {batch = 1 : i64, m = 8 : i64, n = 8 : i64, k = 4 : i64}, out_step_elems = 64 : i64, out_resident_elems = 64 : i64, pes = 4 : i64} : !mtia.tile<8x8xf32>
  func.return
}
// CHECK: error: 'mtia.combine' op every group must hold replicas=2 PEs, but one holds 3
