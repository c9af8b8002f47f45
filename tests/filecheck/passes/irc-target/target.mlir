// RUN: irc-opt %s -p 'irc-target{device=tiny4}' | filecheck %s --check-prefix=SET
// RUN: irc-opt %s -p 'irc-target{device=tiny4}' | irc-opt -p 'irc-target{device=tiny4 cost=t10}' | filecheck %s --check-prefix=SET
// RUN: irc-opt %s -p 'irc-target{device=tiny4}' --print-op-generic | irc-opt | filecheck %s --check-prefix=SET
// RUN: irc-opt %s -p 'irc-target' | filecheck %s --check-prefix=DEFAULT
// RUN: irc-opt %s -p 'irc-target{device=tiny8 cost=seed003}' | filecheck %s --check-prefix=SEED
// RUN: irc-opt %s -p 'irc-target{device="%S/../rtensor-partition/Inputs/tiny16-1152.toml"}' | filecheck %s --check-prefix=FILE

// irc-target writes the module's one target: the device's whole description (so the
// module needs no device file later) and the cost model's name. A module that already
// has the asked-for target keeps it; no options means the module's own target, else
// ipu-mk2 priced by t10.

func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
  func.return %a : tensor<8xf32>
}

// SET: builtin.module attributes {irc.target = #irc.target<"tiny4", "t10", {name = "tiny4", description = "{{[^"]*}}", cores = 4 : i64, cores_per_chip = 4 : i64, sram_bytes = 4096 : i64, clock_hz = {{.*}} : f64, systolic = array<i64: 4, 4>, macs_per_cycle = 4 : i64, topology = "all-to-all", {{.*}}}>} {
// SET-NEXT: func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {
// SET-NOT: irc.target

// DEFAULT: builtin.module attributes {irc.target = #irc.target<"ipu-mk2", "t10", {name = "ipu-mk2", {{.*}}cores = 1472 : i64, {{.*}}sram_bytes = 638976 : i64, {{.*}}}>} {

// SEED: builtin.module attributes {irc.target = #irc.target<"tiny8", "seed003", {name = "tiny8", {{.*}}cores = 8 : i64, {{.*}}}>} {

// FILE: builtin.module attributes {irc.target = #irc.target<"tiny16-1152", "t10", {name = "tiny16-1152", {{.*}}sram_bytes = 1152 : i64, {{.*}}}>} {
