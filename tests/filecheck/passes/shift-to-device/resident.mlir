// RUN: irc-opt %s -p 'rtensor-partition{device=tiny16 mode=op},rtensor-check,rtensor-to-shift,rotation-align,shift-to-device,device-alloc' | filecheck %s

// Each op at its own fastest plan (mode=op: the model-wide plan would give the relu the
// matmul's layout). The model lives on the chip: the hidden activation %h goes from the matmul that
// produces it to the relu that reads it over the exchange (device.relayout into the
// relu's layout, priced as the planner's relayout), never through the host; host I/O
// happens only at the function's edges (its arguments and its result). The relayout is
// an exchange permutation stated per core: core d0 of the relu receives, for d1 in
// {0, 1}, the 4x2 box at column (d0 mod 8) * 2 of the matmul output held by core
// d1 * 8 + (d0 floordiv 8) * 4 (the lowest core of its replica group), written at row
// d1 * 4 of its tile.
func.func @main(%x: tensor<8x64xf32> {irc.name = "x"}, %w1: tensor<64x32xf32> {irc.name = "w1"},
                %b1: tensor<32xf32> {irc.name = "b1"}, %w2: tensor<32x16xf32> {irc.name = "w2"})
    -> (tensor<8x16xf32> {irc.name = "y"}) {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %a = te.op "A[m,n] = relu(H[m,n] + B[n])" (%h, %b1) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y = te.op "Y[m,n] += A[m,k] * W[k,n]" (%a, %w2) : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @main
// CHECK:         %[[H:.*]] = device.alloc {name = "k1.H"
// CHECK:         device.load %x into
// CHECK:         device.load %w1 into
// CHECK:         device.mma "H[m,n] += X[m,k] * W[k,n]" %[[H]]
// CHECK:         device.reduce %[[H]]
// CHECK-NOT:     device.store
// CHECK:         %[[H2:.*]] = device.alloc {name = "k2.H"
// CHECK:         device.relayout %[[H]] into %[[H2]] {shape = array<i64: 8, 32>, origins = affine_map<(d0) -> (0, (d0 * 2))>, bytes = {{[1-9][0-9]*}} : i64, barriers = 2 : i64, pieces = affine_map<(d0, d1) -> (((d1 * 8) + ((d0 floordiv 8) * 4)), 0, ((d0 mod 8) * 2), (d1 * 4), 0)>, piece_count = 2 : i64, piece_shape = array<i64: 4, 2>}
// CHECK:         device.load %b1 into
// CHECK:         device.vector "A[m,n] = relu(H[m,n] + B[n])"
// CHECK:         device.free %[[H]]
// CHECK-NOT:     device.store
// CHECK:         device.relayout
// CHECK:         device.load %w2 into
// CHECK:         device.mma "Y[m,n] += A[m,k] * W[k,n]"
// CHECK:         %[[Y:.*]] = device.store
// CHECK-NOT:     device.load
// CHECK:         func.return %[[Y]] : tensor<8x16xf32>
