// RUN: irc-opt %s | filecheck %s
// RUN: %irc-roundtrip | filecheck %s
// RUN: irc-run %s --report | filecheck %s --check-prefix=EXEC

// preload.mlir's preload yielding the link to contending operators (`yields`, ELK's
// artifact's delay_comp=False): no operator shares the link with it here, so it runs
// as it would not yielding.
func.func @preload(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {irc.target = #irc.target<"tiny16-hbm", "t10", {}>} {
  %P = device.alloc {name = "x.preload", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  %E = device.alloc {name = "x.exec", cores = 2 : i64, bytes = 16 : i64, offset = 16 : i64} : !device.buffer<1x4xf32>
  device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>, yields} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  device.fill %E {value = 0.000000e+00 : f64} : !device.buffer<1x4xf32>
  device.wait %P : !device.buffer<1x4xf32>
  device.relayout %P into %E {shape = array<i64: 2, 4>, source_origins = affine_map<(d0) -> (d0, 0)>, source_group = affine_map<(d0) -> (d0)>, origins = affine_map<(d0) -> ((1 - d0), 0)>, bytes = 16 : i64, barriers = 1 : i64} : !device.buffer<1x4xf32>, !device.buffer<1x4xf32>
  %y = device.store %E {origins = affine_map<(d0) -> ((1 - d0), 0)>, group = affine_map<(d0) -> (d0)>, fill = 0.000000e+00 : f64} : !device.buffer<1x4xf32> -> tensor<2x4xf32>
  device.free %P : !device.buffer<1x4xf32>
  device.free %E : !device.buffer<1x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK:      device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>, yields} : tensor<2x4xf32>, !device.buffer<1x4xf32>

// EXEC: off-chip memory: 1 preloads, 32 bytes, HBM busy 4 cycles
