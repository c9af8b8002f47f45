"""Room left for later operators by an operator's pick in Algorithm 1's evaluation
(`irc.planner.model._ModelProblem.evaluate`; issue 25, item 4).

``evaluate`` gives each op, in program order, its fastest active plan within its budget.
An op whose output (or shared copy) stays on chip across later ops chooses, by that, how
many bytes those ops lose: its fastest plan may keep a partition larger than another
plan's (an output replicated over more cores) and leave a later op no room for even its
smallest plan, where a slower plan of the same op would have let every op run. A layer's
dX before its dW is such a pair: dX's output is kept across dW (16x256 training MLP on
tiny16: dX's fastest plan within 22,528 bytes keeps 4,096 bytes of its output, leaving
dW 18,432 of the 19,456 it needs; its 20,480-byte plan keeps 2,048 and dW fits).

So a pick that leaves some later op across which it keeps tensors less than that op's
least plan needs, counting the ops in between at their least-keeping plans and those
after at their most (``evaluate``'s rule), gives way to the fastest plan of the op that
leaves every such op its room. Where the fastest pick leaves room (every state Algorithm 1
could evaluate before), nothing changes; where no plan does, the fastest is kept and the
state fails as before.
"""

from __future__ import annotations

import math
from typing import Sequence


class LaterRoom:
    """Per op of a ``_ModelProblem``: the later ops its tensors are kept across, and the
    check of a pick against their least plans (module docstring)."""

    def __init__(self, problem) -> None:
        self.problem = problem
        count = len(problem.tables)
        self.later = [[k for k in problem._held_across.get(i, ()) if k > i] for i in range(count)]
        self._least_held: dict[tuple[int, str], int] = {}
        self._keeps_least: dict[tuple[int, int], bool] = {}
        self._checks_memo: dict[int, list] = {}

    def least_held(self, holder: int, tensor: str) -> int:
        """The fewest bytes per core any plan of ``holder`` keeps of ``tensor``."""
        key = (holder, tensor)
        if key not in self._least_held:
            problem = self.problem
            self._least_held[key] = min(problem.held_bytes(holder, j, tensor)
                                        for j in range(len(problem.tables[holder].active)))
        return self._least_held[key]

    def keeps_least(self, i: int, j: int) -> bool:
        """Whether op ``i``'s plan ``j`` keeps the fewest bytes of every tensor op ``i``
        holds across later ops: then no other plan of it leaves them more room."""
        found = self._keeps_least.get((i, j))
        if found is None:
            held = {t for k in self.later[i] for h, t in self.problem.live[k] if h == i}
            found = self._keeps_least[(i, j)] = all(
                self.problem.held_bytes(i, j, t) == self.least_held(i, t) for t in held)
        return found

    def _checks(self, i: int) -> list:
        """Per later op ``k`` op ``i`` keeps tensors across: ``(k, bytes of the holders
        after op i, the earlier holders' bytes per plan, op i's own per plan, the earlier
        holders' most bytes)``."""
        found = self._checks_memo.get(i)
        if found is None:
            problem, found = self.problem, []
            for k in self.later[i]:
                problem.live_bytes(k, [])   # fills its table: per live tensor, bytes per plan, the most last
                static, earlier, own = 0, [], []
                for (h, tensor), (_, held) in zip(problem.live[k], problem._live_tables[k]):
                    if h < i:
                        earlier.append((h, held))
                    elif h == i:
                        own.append(held)
                    else:   # between op i and op k at their least, from op k on at their most
                        static += self.least_held(h, tensor) if h < k else held[-1]
                found.append((k, static, earlier, own, sum(held[-1] for _, held in earlier)))
            self._checks_memo[i] = found
        return found

    def leaves_room(self, i: int, j: int, rows: Sequence[int], choice: Sequence[int], free: float) -> bool:
        """Whether op ``i`` at active plan ``j`` (after ``choice`` for the ops before it)
        leaves every later op it keeps tensors across the bytes of its least plan."""
        least_hot = self.problem.least_hot
        for k, static, earlier, own, most_earlier in self._checks(i):
            least = least_hot[k][rows[k]]
            if not math.isfinite(least):
                continue   # no plan of op k runs in its idle row: no pick of op i helps
            live = static + sum(held[j] for held in own)
            if free - live - most_earlier >= least:
                continue   # room even with the earlier holders at their most
            if free - live - sum(held[choice[h]] for h, held in earlier) < least:
                return False
        return True

    def pick(self, i: int, row: int, budget: float, rows: Sequence[int], choice: Sequence[int], free: float,
             fastest: int) -> int:
        """Op ``i``'s plan in idle row ``row`` within ``budget``: ``fastest`` (its fastest
        there) when it leaves the later ops room, else the fastest that does (``fastest``
        when none does)."""
        if fastest < 0 or self.leaves_room(i, fastest, rows, choice, free):   # (evaluate checks keeps_least)
            return fastest
        table = self.problem.tables[i]
        cycles = table.table[row]
        usable = [j for j in range(len(table.active))
                  if table.hot[j] <= budget and math.isfinite(cycles[j])
                  and (table.searched is None or table.searched[j])]
        for j in sorted(usable, key=lambda j: cycles[j]):
            if self.leaves_room(i, j, rows, choice, free):
                return j
        return fastest


__all__ = ["LaterRoom"]
