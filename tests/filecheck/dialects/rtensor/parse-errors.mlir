// RUN: irc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

func.func @f(%a: !rtensor.tensor<8x16xf32, fs=[1]>) {
  func.return
}
// CHECK: invalid !rtensor.tensor: fs has 1 entries but the tensor has rank 2

// -----

func.func @f(%a: !rtensor.tensor<8x16xf32, padded=4x16>) {
  func.return
}
// CHECK: invalid !rtensor.tensor: padded size 4 of dimension 0 is smaller than its size 8

// -----

func.func @f(%a: !rtensor.tensor<8x16xf32, foo=3>) {
  func.return
}
// CHECK: unknown rtensor.tensor field 'foo' (expected fs, ft, replicas or padded)

// -----

func.func @f(%a: !rtensor.tensor<8x16xf32, fs=[1,0]>) {
  func.return
}
// CHECK: invalid !rtensor.tensor: fs of dimension 1 must be positive integers, got [0]

// -----

func.func @f(%a: !rtensor.tensor<8x16xf32, fs=[1,1], ft=[1,1+1]>) {
  func.return
}
// CHECK: invalid !rtensor.tensor: dimension 1 has 1 index term(s) in fs but 2 in ft

// -----

func.func @f(%a: !rtensor.tensor<8x16xf32, replicas=0>) {
  func.return
}
// CHECK: invalid !rtensor.tensor: replicas must be positive, got 0

// -----

func.func @f(%a: !rtensor.tensor<8x16xf32, ft=[1,1], ft=[1,1]>) {
  func.return
}
// CHECK: field 'ft' given twice

