"""Writing the tools' outputs without ever losing a user's file.

Every file a tool writes goes through `write_atomically`: the bytes go to a temporary
file beside the target, which then replaces the target in one rename, so a failure (a
pass error, a full disk, a file-size limit) leaves the old contents as they were. A
target that is a symbolic link is written through: the file it points to gets the new
contents and the link stays. Before
anything runs, `check_output` refuses a target that is one of the command's inputs
(through any path or link), an existing directory, or anything but a regular file.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable, Iterable
from typing import BinaryIO


class OutputError(Exception):
    """An output path that would overwrite an input or cannot hold a file."""


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path: str, what: str, inputs: Iterable[tuple[str, str]] = ()) -> None:
    """Refuse ``path`` (described as ``what``, e.g. ``-o``) when it names one of
    ``inputs`` (``(path, description)`` pairs), a directory, or an existing file that is
    not a regular file (a device, a pipe)."""
    for source, described in inputs:
        if source and os.path.exists(source) and _same_file(path, source):
            raise OutputError(f"{what} {path} would overwrite {described}; choose another path")
    if not path:
        raise OutputError(f"{what} needs a file name")
    if os.path.isdir(path):
        raise OutputError(f"{what} {path} is a directory; give a file name")
    if os.path.exists(path) and not os.path.isfile(path):
        raise OutputError(f"{what} {path} is not a regular file")
    directory = os.path.dirname(_resolved(path))
    if not os.path.isdir(directory):
        raise OutputError(f"{what} {path}: directory {directory} does not exist")


def _resolved(path: str) -> str:
    """Where writing ``path`` puts the bytes: through symbolic links to their target."""
    return os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)


def write_atomically(path: str, data: bytes | str | Callable[[BinaryIO], None]) -> None:
    """Write ``data`` to ``path`` all at once: into a temporary file beside it, then one
    rename; on any failure ``path`` keeps what it held and the temporary file is gone.
    A symbolic link is written through (its target is replaced, the link kept).
    ``data`` may be a function writing into the (binary, seekable) temporary file, so
    a large output is streamed rather than built in memory first."""
    path = _resolved(path)
    directory = os.path.dirname(path)
    handle, temporary = tempfile.mkstemp(prefix=".irc-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "w+b") as stream:
            if callable(data):
                data(stream)
            else:
                stream.write(data.encode() if isinstance(data, str) else data)
            stream.flush()
            os.fsync(stream.fileno())
        if os.path.exists(path):
            os.chmod(temporary, os.stat(path).st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


class Collected(io.StringIO):
    """A text stream that keeps what was written after it is closed (``text``), so that a
    tool can write its output file only once everything succeeded."""

    def close(self) -> None:
        self.text = self.getvalue()
        super().close()
