"""Errors raised by the planner."""


class SpecError(ValueError):
    """An ``OpSpec`` that does not describe a well-formed tensor expression."""


class PlanError(ValueError):
    """A plan that breaks a T10 constraint, or an operator no plan can fit.

    The message names the constraint and the numbers involved; ``needed`` is the least
    memory per core any plan of the operator takes when that is why none fits.
    """

    def __init__(self, message: str, needed: int | None = None) -> None:
        super().__init__(message)
        self.needed = needed
