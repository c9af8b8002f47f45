// RUN: irc-opt %s | filecheck %s
// RUN: %irc-roundtrip | filecheck %s
// RUN: irc-run %s --report | filecheck %s --check-prefix=EXEC

// ELK's device functions (seeds/004 s4.5): x rests in HBM; it is preloaded into its
// preload-state layout (both cores hold row 0 and row 1: two 16-byte tiles), the fill runs
// while it loads, the wait blocks until it has arrived, and a relayout redistributes it
// into the execute state (each core the other row).
func.func @preload(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {irc.target = #irc.target<"tiny16-hbm", "t10", {}>} {
  %P = device.alloc {name = "x.preload", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %E = device.alloc {name = "x.exec", cores = 2 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  device.fill %E {value = 0.000000e+00 : f64} : !device.buffer<1x4xf32>
  device.wait %P : !device.buffer<1x4xf32>
  device.relayout %P into %E {shape = array<i64: 2, 4>, source_origins = affine_map<(d0) -> (d0, 0)>, source_group = affine_map<(d0) -> (d0)>, origins = affine_map<(d0) -> ((1 - d0), 0)>, bytes = 16 : i64, barriers = 1 : i64} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
  %y = device.store %E {origins = affine_map<(d0) -> ((1 - d0), 0)>, group = affine_map<(d0) -> (d0)>, fill = 0.000000e+00 : f64} : !device.buffer<1x4xf32> -> tensor<2x4xf32>
  device.free %P : !device.buffer<1x4xf32>
  device.free %E : !device.buffer<1x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK:      device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>} : tensor<2x4xf32>, !device.buffer<1x4xf32>
// CHECK-NEXT: device.fill %E
// CHECK-NEXT: device.wait %P : !device.buffer<1x4xf32>
// CHECK-NEXT: device.relayout %P into %E

// Two 16-byte tiles from HBM (32 bytes at 32 GB/s: 1 ns), each controller sending its 16
// distinct bytes once at 16 GB/s (1 ns; replicas are broadcast, ELK s2.2), each core's port
// taking its 16 bytes at 5.5 GB/s: 2.9 ns = 3.85 cycles, none of it hidden (the fill takes
// no time).
// EXEC: off-chip memory: 1 preloads, 32 bytes, HBM busy 4 cycles
// EXEC: exposed load time 4 cycles
// EXEC: breakdown (ELK Figure 18): preload 4
