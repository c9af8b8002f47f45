// RUN: irc-opt %s --split-input-file | filecheck %s
// RUN: irc-opt %s --split-input-file --print-op-generic | irc-opt --split-input-file | filecheck %s
// RUN: irc-opt %S/Inputs/spmd-invalid.mlir --split-input-file --verify-diagnostics | filecheck %S/Inputs/spmd-invalid.mlir

// SPMD per-core values: affine maps of the core id d0 (what shift-to-device writes), each
// evaluated on every core by the verifier and the interpreter; a relayout between two
// on-chip layouts round-trips.
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  func.func @ring(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %X = device.alloc {name = "X", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
    %R = device.alloc {name = "R", cores = 4 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
    %Y = device.alloc {name = "Y", cores = 4 : i64, bytes = 16 : i64, offset = 32 : i64} : !device.buffer<2x2xf32>
    device.load %x into %X {origins = affine_map<(d0) -> (d0 floordiv 2, (d0 mod 2) * 4)>} : tensor<2x8xf32>, !device.buffer<1x4xf32>
    device.shift %X through %R {source = affine_map<(d0) -> ((d0 + 1) mod 4)>} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
    device.relayout %X into %Y {shape = array<i64: 2, 8>, source_origins = affine_map<(d0) -> ((((d0 + 1) mod 4) floordiv 2), ((((d0 + 1) mod 4) mod 2) * 4))>, source_group = affine_map<(d0) -> (d0)>, origins = affine_map<(d0) -> (0, d0 * 2)>, bytes = 16 : i64, barriers = 2 : i64} : !device.buffer<1x4xf32>, !device.buffer<2x2xf32>
    %y = device.store %Y {origins = affine_map<(d0) -> (0, d0 * 2)>, group = affine_map<(d0) -> (d0)>, fill = 0.0 : f64} : !device.buffer<2x2xf32> -> tensor<2x8xf32>
    device.free %X : !device.buffer<1x4xf32>
    device.free %R : !device.buffer<1x4xf32>
    device.free %Y : !device.buffer<2x2xf32>
    func.return %y : tensor<2x8xf32>
  }
}
// CHECK:       device.load %x into %X {origins = affine_map<(d0) -> ((d0 floordiv 2), ((d0 mod 2) * 4))>}
// CHECK:       device.shift %X through %R {source = affine_map<(d0) -> (((d0 + 1) mod 4))>}
// CHECK:       device.relayout %X into %Y {shape = array<i64: 2, 8>, {{.*}}bytes = 16 : i64, barriers = 2 : i64}
// CHECK:       device.store %Y {origins = affine_map<(d0) -> (0, (d0 * 2))>, group = affine_map<(d0) -> (d0)>

// -----

// The same relayout stated as pieces: core d0 receives, for each piece d1 of 2, the
// 1x2 box of core (d0 floordiv 2) * 2 + d1 at column (d0 mod 2) * 2, written at row d1.
builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  func.func @pieces(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %X = device.alloc {name = "X", cores = 4 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
    %Y = device.alloc {name = "Y", cores = 4 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<2x2xf32>
    device.load %x into %X {origins = affine_map<(d0) -> (d0 floordiv 2, (d0 mod 2) * 4)>} : tensor<2x8xf32>, !device.buffer<1x4xf32>
    device.relayout %X into %Y {shape = array<i64: 2, 8>, origins = affine_map<(d0) -> (0, d0 * 2)>, pieces = affine_map<(d0, d1) -> (d1 * 2 + d0 floordiv 2, 0, (d0 mod 2) * 2, d1, 0)>, piece_count = 2 : i64, piece_shape = array<i64: 1, 2>, bytes = 16 : i64, barriers = 2 : i64} : !device.buffer<1x4xf32>, !device.buffer<2x2xf32>
    %y = device.store %Y {origins = affine_map<(d0) -> (0, d0 * 2)>, group = affine_map<(d0) -> (d0)>, fill = 0.0 : f64} : !device.buffer<2x2xf32> -> tensor<2x8xf32>
    device.free %X : !device.buffer<1x4xf32>
    device.free %Y : !device.buffer<2x2xf32>
    func.return %y : tensor<2x8xf32>
  }
}
// CHECK:       device.relayout %X into %Y {shape = array<i64: 2, 8>, origins = affine_map<(d0) -> (0, (d0 * 2))>, pieces = affine_map<(d0, d1) -> (((d1 * 2) + (d0 floordiv 2)), 0, ((d0 mod 2) * 2), d1, 0)>, piece_count = 2 : i64, piece_shape = array<i64: 1, 2>, bytes = 16 : i64, barriers = 2 : i64}
