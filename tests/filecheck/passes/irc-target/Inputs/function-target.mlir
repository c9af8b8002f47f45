func.func @mm(%a: tensor<8x16xf32>, %b: tensor<16x12xf32>) -> tensor<8x12xf32> attributes {irc.target = #irc.target<"tiny4", "t10", {}>} {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) : (tensor<8x16xf32>, tensor<16x12xf32>) -> tensor<8x12xf32>
  func.return %c : tensor<8x12xf32>
}
