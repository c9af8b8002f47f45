// ONNX-shaped operators (irc-translate --import-onnx writes them): a MatMul reading a
// batch slice at a constant index, a broadcast bias add, and a reshape whose read merges
// two axes row-major. The planner describes each (constant dims are slices, a merged
// dim is the contiguous range it covers) and the device program equals te level.
// RUN: irc-run %s --inputs %S/Inputs/constant_index.npz | filecheck %s --check-prefix=EXEC
// The same program after rtensor-partition and rtensor-to-shift (Inputs/constant-index-shift.mlir):
// RUN: irc-opt %S/Inputs/constant-index-shift.mlir -p 'rotation-align,shift-to-device,device-alloc' | filecheck %s
// RUN: irc-opt %S/Inputs/constant-index-shift.mlir -p 'rotation-align,shift-to-device,device-alloc' | irc-opt --print-op-generic | irc-opt | filecheck %s
// RUN: irc-opt %S/Inputs/constant-index-shift.mlir -p 'rotation-align,shift-to-device,device-alloc' | irc-run - --inputs %S/Inputs/constant_index.npz | filecheck %s --check-prefix=EXEC
// RUN: irc-opt %S/Inputs/constant-index-shift.mlir -p 'rotation-align' | irc-run - --inputs %S/Inputs/constant_index.npz | filecheck %s --check-prefix=EXEC
func.func @main(%a: tensor<2x8x12xf32>, %b: tensor<12x16xf32>, %bias: tensor<1x1x16xf32>) -> tensor<1x8x2x8xf32> {
  %y = te.op "Y[b0,m,n] += A[1,m,k] * B[k,n]" (%a, %b) : (tensor<2x8x12xf32>, tensor<12x16xf32>) -> tensor<1x8x16xf32>
  %z = te.op "Y[d0,d1,d2] = A[0,d1,d2] + B[0,0,d2]" (%y, %bias) : (tensor<1x8x16xf32>, tensor<1x1x16xf32>) -> tensor<1x8x16xf32>
  %r = te.op "Y[0,o1,o2,o3] = A[0,o1,8*o2+o3]" (%z) : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
  func.return %r : tensor<1x8x2x8xf32>
}

// The MatMul: A's partition is the slice at batch index 1 (origin 1 on dimension 0 on
// every core, extent 1); it rotates along k like any partition, and the step is a
// device.mma with the constant kept in its expression.
// CHECK:      %A = device.alloc {name = "k1.A", cores = 16 : i64, bytes = 48 : i64, offset = {{[0-9]+}} : i64} : !device.buffer<1x4x3xf32>
// CHECK:      device.load %a into %A {origins = affine_map<(d0) -> (1, {{.*}})>} : tensor<2x8x12xf32>, !device.buffer<1x4x3xf32>
// CHECK:      device.mma "Y[b0,m,n] += A[1,m,k] * B[k,n]" %Y, (%A, %B) {tiles = array<i64: 1, 4, 4, 3>, {{.*}} step = 0 : i64}
// CHECK-NEXT: device.shift %A through %A_recv
// CHECK:      device.mma "Y[b0,m,n] += A[1,m,k] * B[k,n]" {{.*}} step = 1 : i64}
// The matmul's result stays on chip: it moves into the bias add's layout.
// CHECK:      device.relayout %Y into %A_1 {shape = array<i64: 1, 8, 16>
// The broadcast bias: one element per core, B read at [0,0,d2].
// CHECK:      device.load %bias into %B_1 {origins = affine_map<(d0) -> (0, 0, d0)>} : tensor<1x1x16xf32>, !device.buffer<1x1x1xf32>
// CHECK:      device.vector "Y[d0,d1,d2] = A[0,d1,d2] + B[0,0,d2]"
// The reshape: o2 whole, o3 split in 4: each core holds the contiguous 8*(2-1)+2 = 10
// elements its merged index covers, starting at 2 * (o3 block).
// CHECK:      %A_2 = device.alloc {name = "k3.A", cores = 8 : i64, bytes = 160 : i64, offset = {{[0-9]+}} : i64} : !device.buffer<1x4x10xf32>
// CHECK-NEXT: device.relayout %Y_1 into %A_2 {{{.*}} origins = affine_map<(d0) -> (0, ((d0 floordiv 4) * 4), ((d0 mod 4) * 2))>
// CHECK:      device.vector "Y[0,o1,o2,o3] = A[0,o1,8*o2+o3]" %Y_2, (%A_2) {tiles = array<i64: 4, 2, 2>
// CHECK:      %r = device.store %Y_2 {origins = affine_map<(d0) -> (0, ((d0 floordiv 4) * 4), 0, ((d0 mod 4) * 2))>
// CHECK:      func.return %r

// EXEC:      result0: tensor<1x8x2x8, float32>
// EXEC-NEXT: {{\[\[\[\[}} -2. -12.  14. ...  -5.   6.   0.]
// EXEC-NEXT:    [ -6.   0.  -5. ...   8.   3.  -2.]]
// EXEC:        {{\[\[}}  6. -14.   4. ... -10.   5.  -4.]
// EXEC-NEXT:    [-12.   5.  -3. ...  -4.   9.   0.]]]]
