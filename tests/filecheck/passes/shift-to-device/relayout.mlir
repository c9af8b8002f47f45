// RUN: irc-opt %s -p 'inference{device="%S/../rtensor-partition/Inputs/tiny16-1152.toml"}' | filecheck %s
// RUN: irc-opt %s -p 'inference{device="%S/../rtensor-partition/Inputs/tiny16-1152.toml"}' --print-op-generic | irc-opt | filecheck %s

// Layout changes are on-chip exchange permutations, stated per core as SPMD pieces
// (issue 11): `pieces` maps the destination core d0 and the piece d1 to (source core,
// source offsets, destination offsets) of a box of `piece_shape`.
//
// With 1152 bytes per core the weights rest in idle layouts cut finer than the matmuls
// read them, loaded once at the start and kept there for the whole run; each use is a
// setup: the ring group's members send their slices (piece d1 is slice d1, from the
// member keeping it, into its rows of the active partition). An activation moves from
// one kernel's layout into the next one's by pieces too; a rotating output (whose
// partition depends on where its ring stopped) keeps the tile-map form.
func.func @main(%x: tensor<32x32xf16> {irc.name = "x"}, %w0: tensor<32x32xf16> {irc.name = "w0", irc.weight},
                %w1: tensor<32x32xf16> {irc.name = "w1", irc.weight}) -> tensor<32x32xf16> {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w0) : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
  %r0 = te.op "R[m,n] = relu(H[m,n])" (%h0) : (tensor<32x32xf16>) -> tensor<32x32xf16>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%r0, %w1) : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
  func.return %h1 : tensor<32x32xf16>
}

// CHECK-LABEL: func.func @main
// CHECK:         %[[W0I:.*]] = device.alloc {name = "w1.W.idle", {{.*}}} : !device.buffer<4x16xf16>
// CHECK-NEXT:    device.load %w0 into %[[W0I]]
// CHECK-NEXT:    %[[W1I:.*]] = device.alloc {name = "w3.W.idle", {{.*}}} : !device.buffer<4x16xf16>
// CHECK-NEXT:    device.load %w1 into %[[W1I]]
// CHECK:         %[[W0:.*]] = device.alloc {name = "k1.W", {{.*}}} : !device.buffer<8x16xf16>
// CHECK-NEXT:    device.relayout %[[W0I]] into %[[W0]] {shape = array<i64: 32, 32>, origins = affine_map<(d0) -> ({{.*}})>, bytes = 256 : i64, barriers = 2 : i64, pieces = affine_map<(d0, d1) -> ({{.*}}, 0, 0, (d1 * 4), 0)>, piece_count = 2 : i64, piece_shape = array<i64: 4, 16>, setup} : !device.buffer<4x16xf16>, !device.buffer<8x16xf16>
// CHECK-NOT:     device.free %[[W0I]]
// CHECK:         device.mma "H[m,n] += X[m,k] * W[k,n]"
// CHECK:         device.relayout %{{.*}} into %{{.*}} {shape = array<i64: 32, 32>, {{.*}}source_origins = affine_map<(d0) -> ({{.*}})>, source_group = affine_map<(d0) -> ({{.*}})>}
// CHECK:         device.vector "R[m,n] = relu(H[m,n])"
// CHECK:         device.relayout %[[W1I]] into %{{.*}} {{{.*}}pieces = affine_map<(d0, d1) -> ({{.*}})>, piece_count = 2 : i64, piece_shape = array<i64: 4, 16>, setup}
// CHECK:         device.relayout %{{.*}} into %{{.*}} {shape = array<i64: 32, 32>, origins = affine_map<(d0) -> ({{.*}})>, bytes = {{[0-9]+}} : i64, barriers = 2 : i64, pieces = affine_map<(d0, d1) -> ({{.*}})>, piece_count = 4 : i64, piece_shape = array<i64: 16, 2>}
// CHECK:         device.mma "H[m,n] += X[m,k] * W[k,n]"
// CHECK-NOT:     device.free %[[W0I]]
// CHECK-NOT:     device.free %[[W1I]]
// CHECK:         func.return
