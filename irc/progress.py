"""A progress bar for long work: drawn on a terminal's stderr, silent when piped."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, TypeVar

T = TypeVar("T")


class Progress:
    """``with Progress(total, "planning") as bar: bar.advance(label)``.

    Draws only when `stream` is a TTY (so logs and pipes stay clean) and at most
    ~20 times a second.
    """

    def __init__(self, total: int, title: str = "", stream: IO[str] | None = None, width: int = 30):
        self.total = max(total, 0)
        self.title = title
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.done = 0
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self._started = time.perf_counter()
        self._drawn = 0.0

    def advance(self, label: str = "", count: int = 1) -> None:
        self.done = min(self.total, self.done + count) if self.total else self.done + count
        self._draw(label)

    def _draw(self, label: str, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._drawn < 0.05 and self.done < self.total:
            return
        self._drawn = now
        fraction = self.done / self.total if self.total else 1.0
        filled = int(self.width * fraction)
        elapsed = now - self._started
        bar = "#" * filled + "." * (self.width - filled)
        text = f"\r{self.title} [{bar}] {self.done}/{self.total} {elapsed:5.1f}s {label[:40]:<40}"
        self.stream.write(text)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw("", force=True)
            self.stream.write("\n")
            self.stream.flush()

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
