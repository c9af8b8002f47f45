// The chip dialects' shaped types (`irc.dialects.shaped`) are checked when parsed: a parse
// error ends the file, so each case is its own input.
// RUN: sed -n '/^\/\/ case zero$/,/^\/\/ end$/p' %s | not irc-opt 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: sed -n '/^\/\/ case index$/,/^\/\/ end$/p' %s | not irc-opt 2>&1 | filecheck %s --check-prefix=INDEX
// RUN: sed -n '/^\/\/ case rank$/,/^\/\/ end$/p' %s | not irc-opt 2>&1 | filecheck %s --check-prefix=RANK
// RUN: sed -n '/^\/\/ case tile$/,/^\/\/ end$/p' %s | irc-opt | filecheck %s --check-prefix=TILE

// case zero
func.func @zero() {
  %X = device.alloc {name = "X", cores = 2 : i64, bytes = 0 : i64, offset = 0 : i64} : !device.buffer<0x4xf32>
  func.return
}
// end
// ZERO: error: device.buffer dimensions must be positive, got [0, 4]

// case index
func.func @index_elements() {
  %X = device.alloc {name = "X", cores = 2 : i64, bytes = 16 : i64, offset = 0 : i64} : !device.buffer<1x4xindex>
  func.return
}
// end
// INDEX: error: element type index has no known size in bytes

// case rank
func.func @rank() {
  %a = mtia.cb_init {name = "A", id = 0 : i64, depth = 8192 : i64, grid = array<i64: 2, 2>} : !mtia.cb<64x64x2xi8>
  func.return
}
// end
// RANK: error: mtia.cb needs two positive dimensions, got [64, 64, 2]

// case tile
func.func @tile() {
  %t = mtia.alloc {name = "T", pes = 4 : i64, offset = 0 : i64} : !mtia.tile<2x3x4xbf16>
  func.return
}
// end
// TILE: !mtia.tile<2x3x4xbf16>
