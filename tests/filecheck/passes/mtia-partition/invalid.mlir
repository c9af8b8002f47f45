// RUN: not irc-opt %s -p 'mtia-partition{grid=9x9}' 2>&1 | filecheck %s --check-prefix=GRID
// RUN: not irc-opt %s -p 'mtia-partition{device=ipu-mk2}' 2>&1 | filecheck %s --check-prefix=FAMILY
// RUN: not irc-opt %s -p 'mtia-partition{splits=1x4}' 2>&1 | filecheck %s --check-prefix=SPLITS
// RUN: not irc-opt %s -p 'mtia-partition{grid=1x1 splits=1x2x1x1}' 2>&1 | filecheck %s --check-prefix=NONE
// RUN: irc-opt %s -p 'mtia-partition{rotation=false},te-to-mtia' | sed -e 's/irc.target = [^}]*}>/NOTARGET/' -e 's/attributes {NOTARGET} //' > %t.mlir
// RUN: not irc-run %t.mlir 2>&1 | filecheck %s --check-prefix=EXEC

// Options that no plan can meet, and a program without its target, are one diagnostic.
// GRID:   error: mtia-partition: sub-grid 9x9 does not fit mtia-v1's 8x8 PEs
// FAMILY: error: mtia-partition: device 'ipu-mk2' is not of the mtia family
// SPLITS: error: mtia-partition: splits=1x4 must be 4 positive integers joined by 'x'
// NONE:   error: mtia-partition: no section-4 mapping of 'C[m,n] += A[m,k] * B[k,n]' fits mtia-v1's local memory with grid=1x1 splits=1x2x1x1
// EXEC:   invalid.mlir.tmp.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'mtia.cb_init' op: the module has no irc.target
func.func @main(%A: tensor<128x64xi8>, %B: tensor<64x128xi8>) -> tensor<128x128xi8> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%A, %B) : (tensor<128x64xi8>, tensor<64x128xi8>) -> tensor<128x128xi8>
  func.return %c : tensor<128x128xi8>
}
