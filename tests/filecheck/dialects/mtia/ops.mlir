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

// An embedding bag (section 6's TBE): a gather of each PE's bag rows into a circular
// buffer, pooled on the SIMD engine; an operator streamed on the SIMD engines.
// CHECK-LABEL: func.func @bags
// CHECK-NEXT:    %rows = mtia.cb_init {name = "t", id = 0 : i64, depth = 1024 : i64, grid = array<i64: 1, 4>} : !mtia.cb<16x16xf32>
// CHECK-NEXT:    mtia.gather %t, %idx, %off into %rows {first = affine_map<(d0, d1) -> ((d1 * 2))>, samples = 2 : i64, tables = array<i64: 30, 20>, batch = 8 : i64, level = "dram"} : tensor<50x16xf32>, tensor<64xi64>, tensor<17xi64>, !mtia.cb<16x16xf32>
// CHECK-NEXT:    %pooled = mtia.pool %rows {mode = "mean"} : !mtia.cb<16x16xf32> -> !mtia.acc<2x32xf32>
// CHECK-NEXT:    %y = mtia.store %pooled {origin = affine_map<(d0, d1) -> ((d1 * 2), 0)>, level = "sram"} : !mtia.acc<2x32xf32> -> tensor<8x32xf32>
// CHECK-NEXT:    %z = mtia.simd "Z[b,e] = relu(Y[b,e])" (%y) {homes = ["sram", "sram"], pes = 64 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32>
func.func @bags(%t: tensor<50x16xf32>, %idx: tensor<64xi64>, %off: tensor<17xi64>) -> tensor<8x32xf32> {
  %rows = mtia.cb_init {name = "t", id = 0 : i64, depth = 1024 : i64, grid = array<i64: 1, 4>} : !mtia.cb<16x16xf32>
  mtia.gather %t, %idx, %off into %rows {first = affine_map<(d0, d1) -> (d1 * 2)>, samples = 2 : i64, tables = array<i64: 30, 20>, batch = 8 : i64, level = "dram"} : tensor<50x16xf32>, tensor<64xi64>, tensor<17xi64>, !mtia.cb<16x16xf32>
  %pooled = mtia.pool %rows {mode = "mean"} : !mtia.cb<16x16xf32> -> !mtia.acc<2x32xf32>
  %y = mtia.store %pooled {origin = affine_map<(d0, d1) -> (d1 * 2, 0)>, level = "sram"} : !mtia.acc<2x32xf32> -> tensor<8x32xf32>
  %z = mtia.simd "Z[b,e] = relu(Y[b,e])" (%y) {homes = ["sram", "sram"], pes = 64 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32>
  func.return %z : tensor<8x32xf32>
}

// A T10 plan on 4 PEs: B rotates around rings of 2 along k, the k split is reduced.
// CHECK-LABEL: func.func @t10
// CHECK-NEXT:    %c = mtia.alloc {name = "C", pes = 4 : i64, offset = 0 : i64, fill = 0.000000e+00 : f64} : !mtia.tile<8x8xf32>
// CHECK-NEXT:    %b = mtia.alloc {name = "B", pes = 4 : i64, offset = 256 : i64} : !mtia.tile<4x8xf32>
// CHECK-NEXT:    %r = mtia.alloc {name = "B.recv", pes = 4 : i64, offset = 384 : i64} : !mtia.tile<4x8xf32>
// CHECK-NEXT:    mtia.load %w into %b {origins = affine_map<(d0) -> ((d0 * 4), 0)>, level = "sram"} : tensor<16x8xf32>, !mtia.tile<4x8xf32>
// CHECK-NEXT:    mtia.step "C[m,n] += A[m,k] * B[k,n]" %c, (%c, %b) {tiles = array<i64: 8, 8, 4>, pes = 4 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>], kind = "matmul", roles = {batch = 1 : i64, m = 8 : i64, n = 8 : i64, k = 4 : i64}, step = 0 : i64} : !mtia.tile<8x8xf32>, (!mtia.tile<8x8xf32>, !mtia.tile<4x8xf32>)
// CHECK-NEXT:    mtia.shift %b through %r {source = affine_map<(d0) -> (((d0 + 1) mod 4))>} : !mtia.tile<4x8xf32>, !mtia.tile<4x8xf32>
// CHECK-NEXT:    mtia.combine %c {group = affine_map<(d0) -> (0)>, replicas = 4 : i64, combiner = "+=", kind = "matmul", roles = {batch = 1 : i64, m = 8 : i64, n = 8 : i64, k = 4 : i64}, out_step_elems = 64 : i64, out_resident_elems = 64 : i64, pes = 4 : i64} : !mtia.tile<8x8xf32>
// CHECK-NEXT:    %y = mtia.put %c {origins = affine_map<(d0) -> (0, 0)>, group = affine_map<(d0) -> (0)>, level = "sram"} : !mtia.tile<8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT:    mtia.free %r : !mtia.tile<4x8xf32>
func.func @t10(%w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %c = mtia.alloc {name = "C", pes = 4 : i64, offset = 0 : i64, fill = 0.0 : f64} : !mtia.tile<8x8xf32>
  %b = mtia.alloc {name = "B", pes = 4 : i64, offset = 256 : i64} : !mtia.tile<4x8xf32>
  %r = mtia.alloc {name = "B.recv", pes = 4 : i64, offset = 384 : i64} : !mtia.tile<4x8xf32>
  mtia.load %w into %b {origins = affine_map<(d0) -> (d0 * 4, 0)>, level = "sram"} : tensor<16x8xf32>, !mtia.tile<4x8xf32>
  mtia.step "C[m,n] += A[m,k] * B[k,n]" %c, (%c, %b) {tiles = array<i64: 8, 8, 4>, pes = 4 : i64, windows = [affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>, affine_map<(d0) -> (0, 0)>], kind = "matmul", roles = {batch = 1 : i64, m = 8 : i64, n = 8 : i64, k = 4 : i64}, step = 0 : i64} : !mtia.tile<8x8xf32>, (!mtia.tile<8x8xf32>, !mtia.tile<4x8xf32>)
  mtia.shift %b through %r {source = affine_map<(d0) -> ((d0 + 1) mod 4)>} : !mtia.tile<4x8xf32>, !mtia.tile<4x8xf32>
  mtia.combine %c {group = affine_map<(d0) -> (0)>, replicas = 4 : i64, combiner = "+=", kind = "matmul", roles = {batch = 1 : i64, m = 8 : i64, n = 8 : i64, k = 4 : i64}, out_step_elems = 64 : i64, out_resident_elems = 64 : i64, pes = 4 : i64} : !mtia.tile<8x8xf32>
  %y = mtia.put %c {origins = affine_map<(d0) -> (0, 0)>, group = affine_map<(d0) -> (0)>, level = "sram"} : !mtia.tile<8x8xf32> -> tensor<8x8xf32>
  mtia.free %r : !mtia.tile<4x8xf32>
  func.return %y : tensor<8x8xf32>
}
