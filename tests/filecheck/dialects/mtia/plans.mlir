// mtia-partition's plans are attributes of the mtia dialect (`irc.dialects.mtia_plans`):
// they round-trip, and their verifiers check each field's kind and range when parsed (a
// parse error ends the file, so each invalid case is its own input).
// RUN: sed -n '/^\/\/ case valid$/,/^\/\/ end$/p' %s | irc-opt | irc-opt | filecheck %s --check-prefix=VALID
// RUN: sed -n '/^\/\/ case missing$/,/^\/\/ end$/p' %s | not irc-opt 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: sed -n '/^\/\/ case axis$/,/^\/\/ end$/p' %s | not irc-opt 2>&1 | filecheck %s --check-prefix=AXIS
// RUN: sed -n '/^\/\/ case temporal$/,/^\/\/ end$/p' %s | not irc-opt 2>&1 | filecheck %s --check-prefix=TEMPORAL
// RUN: sed -n '/^\/\/ case unknown$/,/^\/\/ end$/p' %s | not irc-opt 2>&1 | filecheck %s --check-prefix=UNKNOWN

// case valid
func.func @planned(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %z = te.op "Z[i,j] = X[i,j] + Y[i,j]" (%x, %y) {mtia.stream = #mtia.stream<{homes = ["sram", "sram", "dram"], pes = 64 : i64, planned_cycles = 12.5 : f64}>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}
// end
// VALID: {mtia.stream = #mtia.stream<{homes = ["sram", "sram", "dram"], pes = 64 : i64, planned_cycles = 1.250000e+01 : f64}>}

// case missing
func.func @missing(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %z = te.op "Z[i,j] = X[i,j]" (%x) {mtia.stream = #mtia.stream<{homes = ["sram", "sram"]}>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}
// end
// MISSING: error: #mtia.stream needs the field(s) pes, planned_cycles

// case axis
func.func @axis(%a: tensor<8x8xi8>, %b: tensor<8x8xi8>) -> tensor<8x8xi32> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) {mtia.mapping = #mtia.mapping<{grid = array<i64: 1, 2>, splits = array<i64: 1, 1, 1, 2>, per_pe = array<i64: 1, 8, 8, 4>, rows_axis = "k", k_along = "cols", passes = array<i64: 1, 1>, depths = array<i64: 64, 64>, homes = ["sram", "sram", "sram"], multicast_row_A = [array<i64: 0>], multicast_column_B = [array<i64: 0, 1>], planned_cycles = 1.0 : f64}>} : (tensor<8x8xi8>, tensor<8x8xi8>) -> tensor<8x8xi32>
  func.return %c : tensor<8x8xi32>
}
// end
// AXIS: error: #mtia.mapping field rows_axis must be m or n, got "k"

// case temporal
func.func @temporal(%a: tensor<8x8xf16>, %b: tensor<8x8xf16>) -> tensor<8x8xf16> {
  %c = te.op "C[m,n] += A[m,k] * B[k,n]" (%a, %b) {mtia.rotation = #mtia.rotation<{op_factors = array<i64: 2, 2, 2>, temporal = {C = array<i64: 1, 1>, A = array<i64: 1, 1, 1>, B = array<i64: 1, 1, 1>}, homes = ["sram", "sram", "sram"], planned_cycles = 1.0 : f64}>} : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
  func.return %c : tensor<8x8xf16>
}
// end
// TEMPORAL: error: #mtia.rotation temporal factors of C must be 3 positive integers (one per axis of op_factors)

// case unknown
func.func @unknown(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %z = te.op "Z[i,j] = X[i,j]" (%x) {mtia.stream = #mtia.stream<{homes = ["sram", "sram"], pes = 4 : i64, planned_cycles = 1.0 : f64, lanes = 8 : i64}>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}
// end
// UNKNOWN: error: #mtia.stream has unknown field(s) lanes; it takes homes, pes, planned_cycles
