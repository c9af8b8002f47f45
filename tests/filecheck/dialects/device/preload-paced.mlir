// RUN: irc-opt %s | filecheck %s
// RUN: %irc-roundtrip | filecheck %s
// RUN: irc-run %s --report | filecheck %s --check-prefix=EXEC

// preload.mlir's preload paced to half of its busiest link (`link_share`, ELK's artifact's
// NoC load threshold): each core's port took its 16 bytes at the whole 5.5 GB/s (3.85
// cycles); at half of it the preload lasts twice as long, 7.71 cycles, none of it hidden.
func.func @preload(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {irc.target = #irc.target<"tiny16-hbm", "t10", {}>} {
  %P = device.alloc {name = "x.preload", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %E = device.alloc {name = "x.exec", cores = 2 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>, link_share = 0.5 : f64} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  device.fill %E {value = 0.000000e+00 : f64} : !device.buffer<1x4xf32>
  device.wait %P : !device.buffer<1x4xf32>
  device.relayout %P into %E {shape = array<i64: 2, 4>, source_origins = affine_map<(d0) -> (d0, 0)>, source_group = affine_map<(d0) -> (d0)>, origins = affine_map<(d0) -> ((1 - d0), 0)>, bytes = 16 : i64, barriers = 1 : i64} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
  %y = device.store %E {origins = affine_map<(d0) -> ((1 - d0), 0)>, group = affine_map<(d0) -> (d0)>, fill = 0.000000e+00 : f64} : !device.buffer<1x4xf32> -> tensor<2x4xf32>
  device.free %P : !device.buffer<1x4xf32>
  device.free %E : !device.buffer<1x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK:      device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>, link_share = 5.000000e-01 : f64} : tensor<2x4xf32>, !device.buffer<1x4xf32>

// EXEC: off-chip memory: 1 preloads, 32 bytes, HBM busy 8 cycles
// EXEC: exposed load time 8 cycles
// EXEC: breakdown (ELK Figure 18): preload 8
