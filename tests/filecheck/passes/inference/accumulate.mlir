// RUN: irc-run %s | filecheck %s --check-prefix=VALUES
// RUN: irc-opt %s -p 'inference{device=tiny16}' | irc-run - | filecheck %s --check-prefix=VALUES
// RUN: irc-opt %s -p 'inference{device=tiny16}' | filecheck %s
// RUN: irc-opt %s -p 'inference{device=tiny16}' | irc-opt --print-op-generic | irc-opt | filecheck %s

// One numerics contract at every level: an f16 batch matmul whose plan splits k over 4
// cores keeps its partial sums in an f32 accumulator (16 B per core, not 8) through the
// cross-core reduction, which rounds them to f16 once, in place. The te level sums in
// f32 and rounds once too, so both print the same values on the same (seeded) inputs;
// rounding each core's partial sum to f16 before the reduction changes many of them.
func.func @main(%a: tensor<2x8x128xf16>, %b: tensor<2x128x8xf16>) -> tensor<2x8x8xf16> {
  %c = te.op "C[b,m,n] += A[b,m,k] * B[b,k,n]" (%a, %b) : (tensor<2x8x128xf16>, tensor<2x128x8xf16>) -> tensor<2x8x8xf16>
  func.return %c : tensor<2x8x8xf16>
}
// CHECK:      %C = device.alloc {name = "k1.C", cores = 16 : i64, bytes = 128 : i64, offset = 0 : i64} : !device.buffer<1x8x4xf32>
// CHECK:      device.mma "C[b,m,n] += A[b,m,k] * B[b,k,n]" %C, (%A, %B) {{.*}} dtype_bytes = 2 : i64} : !device.buffer<1x8x4xf32>, (!device.buffer<1x8x32xf16>, !device.buffer<1x32x4xf16>)
// CHECK-NEXT: %C_rounded = device.reduce %C {{{.*}}replicas = 4 : i64, combiner = "+="{{.*}}} : !device.buffer<1x8x4xf32> -> !device.buffer<1x8x4xf16>
// CHECK-NEXT: %c = device.store %C_rounded {{.*}} : !device.buffer<1x8x4xf16> -> tensor<2x8x8xf16>
// CHECK-NEXT: device.free %C_rounded : !device.buffer<1x8x4xf16>

// VALUES:      result0: tensor<2x8x8, float16>
// VALUES-NEXT: {{\[\[\[}} 13.266   -4.02    -7.28   ...   2.738   -0.1404   1.471 ]
// VALUES-NEXT:   [ -3.617   12.11     5.812  ...  -2.889    4.566    7.605 ]
// VALUES-NEXT:   [ 22.36   -12.15     0.6904 ...   2.018    6.992    3.566 ]
// VALUES-NEXT:   ...
// VALUES-NEXT:   [ -2.201   -6.664    3.871  ...  -9.99    15.      13.625 ]
// VALUES-NEXT:   [  3.574    4.145    8.57   ...  -0.2913 -17.69     4.137 ]
// VALUES-NEXT:   [ -0.0669 -13.93     6.895  ...  24.8     21.5     18.3   ]]
// VALUES:       [ 17.89    -1.742    9.266  ... -20.6     -3.148   -2.773 ]
// VALUES-NEXT:  [ -2.38     3.133    1.368  ...  -8.11   -16.17    -2.207 ]]]
