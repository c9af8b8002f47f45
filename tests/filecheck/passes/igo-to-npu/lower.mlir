// RUN: irc-opt %s -p 'igo-to-npu{device="%S/Inputs/npu_hand.toml"}' | filecheck %s
// RUN: irc-opt %s -p 'igo-to-npu{device="%S/Inputs/npu_hand.toml"}' --print-op-generic | irc-opt | filecheck %s
// RUN: irc-opt %s -p 'igo-to-npu{device="%S/Inputs/npu_hand.toml" baseline=shared}' | filecheck %s --check-prefix=SHARED

// The hand-derived layer of tests/cost/test_igo_cost.py (M=4, K=2, N=2, 2x2 tiles of
// i8; 12 bytes resident, three tiles). The module's target becomes the NPU.
// CHECK: builtin.module attributes {irc.target = #irc.target<"npu-hand", "igo", {{.*}}family = "npu"}>}

// The baseline (every dX step, then every dW step) is the paper's two operators
// (baseline=separate, the default): when the dX operator ends, its tiles (W, dY<1,0>)
// are dropped, and the dW operator loads X and dY again: dY is read twice.
// CHECK-LABEL: func.func @baseline
// CHECK:         npu.kernel {{.*}} {gemm = array<i64: 4, 2, 2>, tiles = array<i64: 2, 2, 2>, order = "sequential"}
// CHECK-NEXT:      npu.load "dY" <0, 0>
// CHECK-NEXT:      npu.load "W" <0, 0>
// CHECK-NEXT:      npu.swap
// CHECK-NEXT:      npu.gemm "dx" <0, 0, 0> dataflow "os"
// CHECK-NEXT:      npu.load "dY" <1, 0>
// CHECK-NEXT:      npu.free "dY" <0, 0>
// CHECK-NEXT:      npu.store "dX" <0, 0>
// CHECK-NEXT:      npu.swap
// CHECK-NEXT:      npu.gemm "dx" <1, 0, 0> dataflow "os"
// CHECK-NEXT:      npu.free "W" <0, 0>
// CHECK-NEXT:      npu.free "dY" <1, 0>
// CHECK-NEXT:      npu.load "X" <0, 0>
// CHECK-NEXT:      npu.load "dY" <0, 0>
// CHECK-NEXT:      npu.store "dX" <1, 0>
// CHECK-NEXT:      npu.swap
// CHECK-NEXT:      npu.gemm "dw" <0, 0, 0> dataflow "os"
// CHECK-NEXT:      npu.free "X" <0, 0>
// CHECK-NEXT:      npu.free "dY" <0, 0>
// CHECK-NEXT:      npu.load "X" <1, 0>
// CHECK-NEXT:      npu.load "dY" <1, 0>
// CHECK-NEXT:      npu.swap
// CHECK-NEXT:      npu.gemm "dw" <1, 0, 0> dataflow "os"
// CHECK-NEXT:      npu.free "X" <1, 0>
// CHECK-NEXT:      npu.free "dY" <1, 0>
// CHECK-NEXT:      npu.store "dW" <0, 0>
// CHECK-NEXT:    }

// One walk through one cache (baseline=shared): dY<1,0> stays across the two GEMMs
// until the LRU rule evicts it for dY<0,0>; with three resident tiles dY is read twice
// all the same.
// SHARED-LABEL: func.func @baseline
// SHARED:           npu.gemm "dx" <1, 0, 0> dataflow "os"
// SHARED-NEXT:      npu.free "W" <0, 0>
// SHARED-NEXT:      npu.load "X" <0, 0>
// SHARED-NEXT:      npu.load "dY" <0, 0>
// SHARED-NEXT:      npu.free "dY" <1, 0>
// SHARED-NEXT:      npu.store "dX" <1, 0>
// SHARED-NEXT:      npu.swap
// SHARED-NEXT:      npu.gemm "dw" <0, 0, 0> dataflow "os"
func.func @baseline(%dy: tensor<4x2xi8>, %w: tensor<2x2xi8>, %x: tensor<4x2xi8>) -> (tensor<4x2xi8>, tensor<2x2xi8>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) order "sequential" {tiles = array<i64: 2, 2, 2>} : (tensor<4x2xi8>, tensor<2x2xi8>, tensor<4x2xi8>) -> (tensor<4x2xi8>, tensor<2x2xi8>)
  func.return %dx, %dw : tensor<4x2xi8>, tensor<2x2xi8>
}

// Interleaved, each dY tile is read once, but the dW partial is spilled to make room
// for dX<1,0> and read back (§4.3).
// CHECK-LABEL: func.func @interleave
// CHECK:           npu.gemm "dw" <0, 0, 0> dataflow "os"
// CHECK-NEXT:      npu.free "X" <0, 0>
// CHECK-NEXT:      npu.free "dY" <0, 0>
// CHECK-NEXT:      npu.load "dY" <1, 0>
// CHECK-NEXT:      npu.load "W" <0, 0>
// CHECK-NEXT:      npu.spill "dW" <0, 0, 0>
// CHECK-NEXT:      npu.swap
// CHECK-NEXT:      npu.gemm "dx" <1, 0, 0> dataflow "os"
// CHECK-NEXT:      npu.free "W" <0, 0>
// CHECK-NEXT:      npu.load "X" <1, 0>
// CHECK-NEXT:      npu.reload "dW" <0, 0, 0>
// CHECK-NEXT:      npu.store "dX" <1, 0>
// CHECK-NEXT:      npu.swap
// CHECK-NEXT:      npu.gemm "dw" <1, 0, 0> dataflow "os"
// CHECK-NEXT:      npu.free "X" <1, 0>
// CHECK-NEXT:      npu.free "dY" <1, 0>
// CHECK-NEXT:      npu.store "dW" <0, 0>
// CHECK-NEXT:    }
func.func @interleave(%dy: tensor<4x2xi8>, %w: tensor<2x2xi8>, %x: tensor<4x2xi8>) -> (tensor<4x2xi8>, tensor<2x2xi8>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) order "interleave" {tiles = array<i64: 2, 2, 2>} : (tensor<4x2xi8>, tensor<2x2xi8>, tensor<4x2xi8>) -> (tensor<4x2xi8>, tensor<2x2xi8>)
  func.return %dx, %dw : tensor<4x2xi8>, tensor<2x2xi8>
}
