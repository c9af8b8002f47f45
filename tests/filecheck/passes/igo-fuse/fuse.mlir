// RUN: irc-opt %s -p 'te-autodiff,igo-fuse{order=interleave}' | filecheck %s
// RUN: irc-opt %s -p 'te-autodiff,igo-fuse{order=interleave}' --print-op-generic | irc-opt | filecheck %s
// RUN: irc-opt %s -p 'te-autodiff,igo-fuse{order=paper}' | filecheck %s --check-prefix=PAPER
// RUN: irc-opt %s -p 'te-autodiff,igo-fuse' | filecheck %s --check-prefix=COST
// RUN: irc-opt %s -p 'te-autodiff,igo-fuse{order=interleave partition=ifmap-sharing device=npu-server cores=4}' | filecheck %s --check-prefix=PART
// RUN: irc-opt %s -p 'te-autodiff,igo-fuse{memory=scalesim}' | filecheck %s --check-prefix=SCALESIM

// IGO §4.2: the second layer's dX = dY·W2ᵀ and dW2 = Aᵀ·dY read the same dY and become
// one igo.grad_pair; the first layer's input needs no gradient (no dX), so its lone dW
// stays a te.op. irc.gemm states the forward GEMM X(M,K)·W(K,N) the orders are priced on,
// tiles the tile sizes the chosen order runs with (searched per order: here the whole GEMM fits).
// CHECK-LABEL: func.func @main
// CHECK:         %[[DY:.*]] = te.op "D1[m,n] = {{.*}}" (%[[Y:.*]], %t)
// CHECK-NEXT:    %[[DA:.*]], %[[DW2:.*]] = igo.grad_pair dx "D2[m,k] += G[m,n] * W[k,n]" dw "D3[k,n] += G[m,n] * A[m,k]" (%[[DY]], %w2, %[[A:.*]]) order "interleave" {irc.gemm = "M=8 K=32 N=16", tiles = array<i64: 8, 32, 16>} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<32x16xf32>)
// CHECK-NEXT:    %[[DH:.*]] = te.op "D4[m,n] = select(H[m,n] + B[n] > 0, G[m,n], 0)" (%{{.*}}, %b1, %[[DA]])
// CHECK-NEXT:    %[[DB:.*]] = te.op "D5[n] += {{.*}}" (%{{.*}}, %b1, %[[DA]])
// CHECK-NEXT:    %[[DW1:.*]] = te.op "D6[k,n] += G[m,n] * X[m,k]" (%[[DH]], %x)
// CHECK-NEXT:    func.return %{{.*}}, %[[DW1]], %[[DB]], %[[DW2]]
// Algorithm 1: max(M,N,K)/min(M,N,K) = 32/8 = 4 is not almost square, K > N and K > M: dW-major.
// PAPER:         igo.grad_pair {{.*}} order "dw-major"
// Everything fits the edge NPU's scratchpad: every order moves the same bytes, and running dW
// first on the one dY tile overlaps the loads of W with dW's GEMM: dx-major-dw-first.
// COST:          igo.grad_pair {{.*}} order "dx-major-dw-first"
// On SCALE-Sim's buffers the same order wins, with the tiles irc's scratchpad runs it with.
// SCALESIM:      igo.grad_pair {{.*}} order "dx-major-dw-first" {irc.gemm = "M=8 K=32 N=16", tiles = array<i64: 8, 32, 16>}
// §5 ifmap-sharing over the 4 cores: K split, dY shared.
// PART:          igo.grad_pair {{.*}} order "interleave" {irc.gemm = "M=8 K=32 N=16", partition = "ifmap-sharing", parts = 4 : i64, tiles = array<i64: {{.*}}>}
func.func @main(%x: tensor<8x64xf32> {irc.name = "x"}, %w1: tensor<64x32xf32> {irc.name = "w1", irc.weight},
                %b1: tensor<32xf32> {irc.name = "b1", irc.weight}, %w2: tensor<32x16xf32> {irc.name = "w2", irc.weight},
                %t: tensor<8x16xf32> {irc.name = "t"}) -> (tensor<f32> {irc.name = "loss"}) {
  %h = te.op "H[m,n] += X[m,k] * W[k,n]" (%x, %w1) : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  %a = te.op "A[m,n] = relu(H[m,n] + B[n])" (%h, %b1) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y = te.op "Y[m,n] += A[m,k] * W[k,n]" (%a, %w2) : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %l = te.op "L[] += (Y[m,n] - T[m,n]) * (Y[m,n] - T[m,n]) * 0.5" (%y, %t) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
