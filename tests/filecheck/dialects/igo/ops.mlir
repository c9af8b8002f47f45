// RUN: irc-opt %s | filecheck %s
// RUN: %irc-roundtrip | filecheck %s
// RUN: irc-run %s --entry pair --output %t.npz && irc-run %s --entry unfused --output %t2.npz && irc-run %s --entry inter_core --output %t3.npz

// CHECK-LABEL: func.func @pair
// CHECK-NEXT:    %{{.*}}, %{{.*}} = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) order "dw-major" : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>)
func.func @pair(%dy: tensor<4x5xf32>, %w: tensor<6x5xf32>, %x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) order "dw-major" : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>)
  func.return %dx, %dw : tensor<4x6xf32>, tensor<6x5xf32>
}

func.func @unfused(%dy: tensor<4x5xf32>, %w: tensor<6x5xf32>, %x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>) {
  %dx = te.op "DX[m,k] += G[m,n] * W[k,n]" (%dy, %w) : (tensor<4x5xf32>, tensor<6x5xf32>) -> tensor<4x6xf32>
  %dw = te.op "DW[k,n] += G[m,n] * X[m,k]" (%dy, %x) : (tensor<4x5xf32>, tensor<4x6xf32>) -> tensor<6x5xf32>
  func.return %dx, %dw : tensor<4x6xf32>, tensor<6x5xf32>
}

// On an inter-core chip a pair has no tile order (its compute-shift plan decides).
// CHECK-LABEL: func.func @inter_core
// CHECK-NEXT:    %{{.*}}, %{{.*}} = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>)
func.func @inter_core(%dy: tensor<4x5xf32>, %w: tensor<6x5xf32>, %x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>) {
  %dx, %dw = igo.grad_pair dx "DX[m,k] += G[m,n] * W[k,n]" dw "DW[k,n] += G[m,n] * X[m,k]" (%dy, %w, %x) : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6x5xf32>)
  func.return %dx, %dw : tensor<4x6xf32>, tensor<6x5xf32>
}
