// RUN: irc-opt %s | filecheck %s
// RUN: %irc-roundtrip | filecheck %s

// Every mtia op in its custom form, and the same after a generic round trip. Bᵀ slices
// (section 4 keeps k innermost in both operands) and a north-to-south reduction.
// CHECK-LABEL: func.func @fc_bt
// CHECK-NEXT:    %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64xf16>
// CHECK-NEXT:    %b = mtia.cb_init {name = "B", id = 1 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64xf16>
// CHECK-NEXT:    mtia.dma %x into %a {origin = affine_map<(d0, d1) -> ((d1 * 64), (d0 * 64))>, block = array<i64: 64, 32>, multicast = "column", level = "dram", passes = 2 : i64} : tensor<128x128xf16>, !mtia.cb<64x64xf16>
// CHECK-NEXT:    mtia.dma %w into %b {origin = affine_map<(d0, d1) -> (0, (d0 * 64))>, block = array<i64: 64, 32>, multicast = "row", level = "sram"} : tensor<64x128xf16>, !mtia.cb<64x64xf16>
// CHECK-NEXT:    %acc = mtia.mml %a, %b {b_transposed = true} : !mtia.cb<64x64xf16>, !mtia.cb<64x64xf16> -> !mtia.acc<64x64xf32>
// CHECK-NEXT:    %sum = mtia.reduce %acc {direction = "north-south", chain = 2 : i64} : !mtia.acc<64x64xf32>
// CHECK-NEXT:    %y = mtia.store %sum {origin = affine_map<(d0, d1) -> ((d1 * 64), 0)>, level = "sram"} : !mtia.acc<64x64xf32> -> tensor<128x64xf16>
func.func @fc_bt(%x: tensor<128x128xf16>, %w: tensor<64x128xf16>) -> tensor<128x64xf16> {
  %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64xf16>
  %b = mtia.cb_init {name = "B", id = 1 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64xf16>
  mtia.dma %x into %a {origin = affine_map<(d0, d1) -> (d1 * 64, d0 * 64)>, block = array<i64: 64, 32>, multicast = "column", level = "dram", passes = 2 : i64} : tensor<128x128xf16>, !mtia.cb<64x64xf16>
  mtia.dma %w into %b {origin = affine_map<(d0, d1) -> (0, d0 * 64)>, block = array<i64: 64, 32>, multicast = "row", level = "sram"} : tensor<64x128xf16>, !mtia.cb<64x64xf16>
  %acc = mtia.mml %a, %b {b_transposed = true} : !mtia.cb<64x64xf16>, !mtia.cb<64x64xf16> -> !mtia.acc<64x64xf32>
  %sum = mtia.reduce %acc {direction = "north-south", chain = 2 : i64} : !mtia.acc<64x64xf32>
  %y = mtia.store %sum {origin = affine_map<(d0, d1) -> (d1 * 64, 0)>, level = "sram"} : !mtia.acc<64x64xf32> -> tensor<128x64xf16>
  func.return %y : tensor<128x64xf16>
}
