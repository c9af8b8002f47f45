"""A progress bar for long work (tqdm): drawn on a terminal's stderr, silent when piped."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import IO, TypeVar

from tqdm import tqdm

T = TypeVar("T")


class Progress:
    """``with Progress(total, "planning") as bar: bar.advance(label)``: a tqdm bar over
    ``total`` steps, the label of the last one beside it.

    Draws only when `stream` is a TTY (so logs and pipes stay clean) and at most
    ~20 times a second.
    """

    def __init__(self, total: int, title: str = "", stream: IO[str] | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = max(total, 0)
        self._bar = tqdm(total=self.total, desc=title, file=self.stream, disable=not self.enabled,
                         mininterval=0.05, dynamic_ncols=True, leave=True)

    @property
    def done(self) -> int:
        return int(self._bar.n)

    def advance(self, label: str = "", count: int = 1) -> None:
        if self.enabled:
            self._bar.set_postfix_str(label[:40], refresh=False)
        self._bar.update(count)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def track(items: Iterable[T], total: int, title: str = "", label=str) -> Iterator[T]:
    """Iterate `items`, advancing a `Progress` bar with `label(item)` after each."""
    with Progress(total, title) as bar:
        for item in items:
            yield item
            bar.advance(label(item))
