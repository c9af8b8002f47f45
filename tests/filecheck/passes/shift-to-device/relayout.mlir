// RUN: irc-opt %s -p 'inference{device="%S/../rtensor-partition/Inputs/tiny16-896.toml"}' | filecheck %s
// RUN: irc-opt %s -p 'inference{device="%S/../rtensor-partition/Inputs/tiny16-896.toml"}' --print-op-generic | irc-opt | filecheck %s

// Layout changes are on-chip exchange permutations, stated per core as SPMD pieces
// (issue 11): `pieces` maps the destination core d0 and the piece d1 to (source core,
// source offsets, destination offsets) of a box of `piece_shape`.
//
// With 896 bytes per core (the f32 accumulators of the partial sums need their room) the
// first weight rests in an idle layout cut finer than its matmul reads it, loaded once at
// the start and kept there for the whole run; its use is a setup: the ring group's members
// send their slices (piece d1 is slice d1, from the member keeping it, into its rows of the
// active partition). The second rests exactly as it is read: its setup is one piece that
// stays on its core and moves nothing. The relu reads the matmul's output where it lies
// (its plan cuts the tensor as the matmul's does: one piece per core, nothing moves); the
// next matmul receives it by pieces from the other cores.
func.func @main(%x: tensor<32x32xf16> {irc.name = "x"}, %w0: tensor<32x32xf16> {irc.name = "w0", irc.weight},
                %w1: tensor<32x32xf16> {irc.name = "w1", irc.weight}) -> tensor<32x32xf16> {
  %h0 = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w0) : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
  %r0 = te.op "R[m,n] = relu(H[m,n])" (%h0) : (tensor<32x32xf16>) -> tensor<32x32xf16>
  %h1 = te.op "H[m,n] += X[m,k] * W[k,n]" (%r0, %w1) : (tensor<32x32xf16>, tensor<32x32xf16>) -> tensor<32x32xf16>
  func.return %h1 : tensor<32x32xf16>
}

// CHECK-LABEL: func.func @main
// CHECK:         %[[W0I:.*]] = device.alloc {name = "w1.W.idle", {{.*}}} : !device.buffer<16x4xf16>
// CHECK-NEXT:    device.load %w0 into %[[W0I]]
// CHECK-NEXT:    %[[W1I:.*]] = device.alloc {name = "w3.W.idle", {{.*}}} : !device.buffer<32x2xf16>
// CHECK-NEXT:    device.load %w1 into %[[W1I]]
// CHECK:         %[[W0:.*]] = device.alloc {name = "k1.W", {{.*}}} : !device.buffer<32x4xf16>
// CHECK-NEXT:    device.relayout %[[W0I]] into %[[W0]] {shape = array<i64: 32, 32>, origins = affine_map<(d0) -> ({{.*}})>, bytes = 256 : i64, barriers = 2 : i64, pieces = affine_map<(d0, d1) -> ({{.*}}, 0, 0, (d1 * 16), 0)>, piece_count = 2 : i64, piece_shape = array<i64: 16, 4>, setup} : !device.buffer<16x4xf16>, !device.buffer<32x4xf16>
// CHECK-NOT:     device.free %[[W0I]]
// CHECK:         device.mma "H[m,n] += X[m,k] * W[k,n]"
// CHECK:         device.relayout %{{.*}} into %{{.*}} {shape = array<i64: 32, 32>, {{.*}}bytes = 0 : i64, barriers = 0 : i64, pieces = affine_map<(d0, d1) -> ({{.*}}, 0, 0, 0, 0)>, piece_count = 1 : i64, piece_shape = array<i64: 16, 4>}
// CHECK:         device.vector "R[m,n] = relu(H[m,n])"
// CHECK:         device.relayout %[[W1I]] into %{{.*}} {{{.*}}bytes = 0 : i64, barriers = 0 : i64, pieces = affine_map<(d0, d1) -> (d0, 0, 0, 0, 0)>, piece_count = 1 : i64, piece_shape = array<i64: 32, 2>, setup}
// CHECK:         device.relayout %{{.*}} into %{{.*}} {shape = array<i64: 32, 32>, origins = affine_map<(d0) -> ({{.*}})>, bytes = {{[1-9][0-9]*}} : i64, barriers = 2 : i64, pieces = affine_map<(d0, d1) -> ({{.*}})>, piece_count = 8 : i64, piece_shape = array<i64: 2, 4>}
// CHECK:         device.mma "H[m,n] += X[m,k] * W[k,n]"
// CHECK-NOT:     device.free %[[W0I]]
// CHECK-NOT:     device.free %[[W1I]]
// CHECK:         func.return
