// RUN: irc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// ELK s4.5's ordering rules for preload_async and wait, checked by their verifiers.

func.func @never_waited(%x: tensor<2x4xf32>) {
  %P = device.alloc {name = "P", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  func.return
}
// CHECK: preload-invalid.mlir:7:3: error: 'device.preload_async' op the preload is never waited for: no device.wait of its buffer follows in the block

// -----

func.func @used_before_wait(%x: tensor<2x4xf32>) {
  %P = device.alloc {name = "P", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  device.fill %P {value = 0.000000e+00 : f64} : !device.buffer<1x4xf32>
  device.wait %P : !device.buffer<1x4xf32>
  func.return
}
// CHECK: preload-invalid.mlir:16:3: error: 'device.preload_async' op 'device.fill' uses the preloaded buffer before the device.wait that completes its preload

// -----

func.func @wait_without_preload() {
  %P = device.alloc {name = "P", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.fill %P {value = 0.000000e+00 : f64} : !device.buffer<1x4xf32>
  device.wait %P : !device.buffer<1x4xf32>
  func.return
}
// CHECK: preload-invalid.mlir:28:3: error: 'device.wait' op no device.preload_async into this buffer precedes the wait in its block

// -----

func.func @waited_twice(%x: tensor<2x4xf32>) {
  %P = device.alloc {name = "P", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  device.wait %P : !device.buffer<1x4xf32>
  device.wait %P : !device.buffer<1x4xf32>
  func.return
}
// CHECK: preload-invalid.mlir:39:3: error: 'device.wait' op no device.preload_async into this buffer precedes the wait in its block

// -----

func.func @element_type(%x: tensor<2x4xf16>) {
  %P = device.alloc {name = "P", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>} : tensor<2x4xf16>, !device.buffer<1x4xf32>
  device.wait %P : !device.buffer<1x4xf32>
  func.return
}
// CHECK: preload-invalid.mlir:48:3: error: 'device.preload_async' op element type mismatch: tensor of f16 into a buffer of f32

// -----

func.func @rank(%x: tensor<8xf32>) {
  %P = device.alloc {name = "P", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.preload_async %x into %P {origins = affine_map<(d0) -> (d0)>} : tensor<8xf32>, !device.buffer<1x4xf32>
  device.wait %P : !device.buffer<1x4xf32>
  func.return
}
// CHECK: preload-invalid.mlir:58:3: error: 'device.preload_async' op cannot preload a rank-1 tensor into a rank-2 buffer

// -----

func.func @link_share_out_of_range(%x: tensor<2x4xf32>) {
  %P = device.alloc {name = "P", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xf32>
  device.preload_async %x into %P {origins = affine_map<(d0) -> (d0, 0)>, link_share = 1.5 : f64} : tensor<2x4xf32>, !device.buffer<1x4xf32>
  device.wait %P : !device.buffer<1x4xf32>
  func.return
}
// CHECK: preload-invalid.mlir:68:3: error: 'device.preload_async' op link_share must be in (0, 1], got 1.5
