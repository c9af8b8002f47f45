"""`irc-plan` on an MTIA-family device (``--device mtia-v1 --cost mtia``): printing the
plans of ``irc.planner.mtia`` (section 4 mappings, T10 rotation plans where cheaper,
tensor homes) for one operator or a whole model."""

from __future__ import annotations

import json

from irc.cost import get_cost_model
from irc.devices.mtia import CHIP_FAMILY
from irc.workloads.dlrm import CONFIGS, dlrm_mtia_model
from irc.planner import PlanError, plan_to_dict
from irc.planner.mtia import plan_model, plan_operator
from irc.tools.family_planner import FamilyPlanner, ModelRequest, OperatorRequest, PlanToolError, print_fallbacks

COST = CHIP_FAMILY.cost_model
"""The cost model an MTIA device is planned with (`irc.cost.mtia`)."""


def configure(args, device):
    """An MTIA device is priced by the ``mtia`` cost model (``--cost mtia``, or unset)."""
    if args.cost not in (None, COST):
        raise PlanToolError(f"error: device {device.name} is of the mtia family: plan it with --cost {COST} "
                            f"(cost model {args.cost!r} prices the IPU kind)")
    return device, get_cost_model(COST)


def _mapping_dict(mapping) -> dict | None:
    if mapping is None:
        return None
    cost = mapping.cost
    return {
        "kind": "stream" if mapping.rows_axis == "stream" else "section-4",
        "rows_axis": mapping.rows_axis, "k_along": mapping.k_along,
        "splits": dict(zip(("batch", "m", "n", "k"), mapping.splits)),
        "grid": list(mapping.grid), "pes": mapping.pes,
        "per_pe": dict(zip(("batch", "m", "n", "k"), mapping.per_pe)),
        "a_passes": mapping.a_passes, "b_passes": mapping.b_passes, "local_bytes": mapping.local_bytes,
        "cycles": cost.total, "bound": cost.bound,
        "terms": {t: getattr(cost, t) for t in ("compute", "memory", "link", "local", "reduction", "issue",
                                                  "fill", "drain")},
        "level_bytes": dict(cost.level_bytes),
    }


def operator_dict(plan) -> dict:
    if plan.chosen == "embedding":
        return {"device": "mtia", "cost_model": "mtia", "chosen": "embedding", "cycles": plan.cycles,
                "seconds": plan.seconds, "homes": dict(plan.homes), "bound": plan.bound,
                "terms": dict(plan.terms), "lookups": plan.spec.lookups}

    return {
        "device": plan.device, "cost_model": "mtia", "chosen": plan.chosen, "cycles": plan.cycles,
        "seconds": plan.seconds, "homes": dict(plan.homes), "mapping": _mapping_dict(plan.mapping),
        "rotation": None if plan.rotation is None else plan_to_dict(plan.rotation),
        "mappings_scored": plan.mappings_scored,
    }


def describe_operator(plan, expr: str, dtype: str, device) -> str:
    spec = plan.spec
    lines = [
        f"operator: {expr}  (kind {spec.kind}, {dtype})",
        f"device: {device.name} ({device.grid_rows}x{device.grid_cols} PEs, {device.local_bytes} B local memory "
        f"per PE, {device.onchip_bytes} B SRAM, {device.dram_bytes} B LPDDR); cost model: mtia",
        "homes: " + ", ".join(f"{name} {level}" for name, level in plan.homes.items()),
        f"chosen: {'T10 rotation plan' if plan.chosen == 'rotation' else 'MTIA mapping (section 4)'}: "
        f"{plan.describe()}",
        f"predicted time: {plan.seconds * 1e6:.3f} us ({plan.cycles:.0f} cycles)",
    ]
    mapping = plan.mapping
    if mapping is not None:
        cost = mapping.cost
        lines.append(f"MTIA mapping: {mapping.describe()}: {cost.total:.0f} cycles, {cost.bound}-bound "
                     f"({mapping.pes} PEs, {mapping.local_bytes} B local memory per PE)")
        for term in ("compute", "memory", "link", "local", "reduction", "issue", "fill", "drain"):
            lines.append(f"  {term:<9} {getattr(cost, term):>12.0f} cycles")
        served = ", ".join(f"{level} {int(nbytes)} B" for level, nbytes in cost.level_bytes.items() if nbytes)
        lines.append(f"  bytes served: {served}")
        if mapping.rows_axis != "stream":
            for tensor, groups in mapping.multicast_groups().items():
                shown = "; ".join(" ".join(f"({r},{c})" for r, c in g) for g in groups[:4])
                lines.append(f"  multicast {tensor}: {len(groups)} groups of {len(groups[0])} PEs: {shown}"
                             + (" ..." if len(groups) > 4 else ""))
    rotation = plan.rotation
    if rotation is not None:
        score = rotation.score
        lines.append(f"T10 rotation: F_op=[{', '.join(map(str, rotation.op_factors))}] on {score.cores} PEs: "
                     f"{score.cycles:.0f} cycles (compute {score.cost.compute:.0f}, load/shift/store "
                     f"{score.cost.shift:.0f}, sync {score.cost.sync:.0f}, reduction {score.cost.reduction:.0f})")
    else:
        lines.append("T10 rotation: no plan fits the PEs' local memory")
    return "\n".join(lines)


def run_operator(args, request: OperatorRequest) -> int:
    """An operator's chosen plan (a section-4 mapping or a T10 rotation plan) and the
    alternative's cost."""
    spec, bound, device = request.spec, request.bound, request.device
    try:
        plan = plan_operator(spec, device)
    except PlanError as error:
        raise PlanToolError(f"error: '{bound.expr}' cannot be placed on {device.name}: {error}") from None
    if args.json:
        print(json.dumps(operator_dict(plan), indent=2, sort_keys=True, default=float))
    else:
        print(describe_operator(plan, str(bound.expr), request.dtype, device))
    return 0


def run_model(args, request: ModelRequest) -> int:
    """A model's plan: a built-in DLRM (``irc.dlrm``: ``dlrm-small``, ``dlrm-lc``,
    ``dlrm-mc``, with its embedding tables and Table III's operator classes) or any model
    ``irc-plan --model`` reads (``request.source_of``)."""
    device, progress, source_of = request.device, request.progress, request.source_of
    categories = {}
    if args.model in CONFIGS:
        config = CONFIGS[args.model]
        model = dlrm_mtia_model(config.at_batch(args.batch or config.batch))
        categories, fallbacks = dict(model.categories), []
    else:
        model, fallbacks, _ = source_of().build(args.batch or 1, family="mtia")
    with progress(len(model.ops), f"planning {model.name}") as bar:
        try:
            plan = plan_model(model, device, progress=lambda done, total, label: bar.advance(label))
        except PlanError as error:
            raise PlanToolError(f"error: {model.name} cannot be placed on {device.name}: {error}") from None
    if args.json:
        print(json.dumps({
            "model": plan.model, "device": plan.device, "cost_model": "mtia", "seconds": plan.seconds,
            "weight_homes": dict(plan.weight_homes), "sram_weight_bytes": plan.sram_weight_bytes,
            "dram_weight_bytes": plan.dram_weight_bytes, "fallbacks": fallbacks,
            "ops": [dict(name=name, kind=op.spec.kind, share=plan.share(i), category=categories.get(name),
                         **operator_dict(op)) for i, (name, op) in enumerate(plan.ops)],
        }, indent=2, sort_keys=True, default=float))
        return 0
    print(f"model {model.name}: {len(model.ops)} ops on {device.name} ({device.grid_rows}x{device.grid_cols} PEs), "
          f"cost model mtia")
    print(f"weights: {plan.sram_weight_bytes} B in SRAM, {plan.dram_weight_bytes} B in LPDDR")
    width = max([len(name) for name, _ in plan.ops] + [2])
    print(f"{'#':>4}  {'op':<{width}}  {'kind':<11}  {'time us':>10}  {'share':>6}  {'homes':<18}  plan")
    for i, (name, op) in enumerate(plan.ops):
        homes = ",".join(level[0] for level in op.homes.values())
        how = {"rotation": "rotation", "mapping": "mapping", "embedding": "lookups"}[op.chosen]
        if op.chosen == "mapping" and op.mapping.rows_axis == "stream":
            how = "SIMD"
        print(f"{i:>4}  {name:<{width}}  {op.spec.kind:<11}  {op.seconds * 1e6:>10.3f}  {plan.share(i) * 100:>5.1f}%  "
              f"{homes:<18}  {how}: {op.describe()}")
    print(f"total: {plan.seconds * 1e6:.3f} us")
    if categories:
        shares: dict = {}
        for i, (name, _) in enumerate(plan.ops):
            shares[categories[name]] = shares.get(categories[name], 0.0) + plan.share(i)
        print("operator breakdown: " + ", ".join(f"{c} {s * 100:.1f}%" for c, s in
                                                 sorted(shares.items(), key=lambda x: -x[1])))
    print_fallbacks(fallbacks)
    return 0


PLANNER = FamilyPlanner(options=(), configure=configure, plan_operator=run_operator, plan_model=run_model)
"""irc-plan's planner of the mtia family (``irc.devices.mtia.CHIP_FAMILY``)."""
