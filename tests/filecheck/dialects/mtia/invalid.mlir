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
