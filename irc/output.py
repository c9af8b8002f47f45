"""Writing the tools' outputs without ever losing a user's file.

Every file a tool writes goes through `write_atomically`: the bytes go to a temporary
file beside the target, which then replaces the target in one rename, so a failure (a
pass error, a full disk, a file-size limit, a signal) leaves the old contents as they
were and no temporary file behind. A target that is a symbolic link is written through:
the file it points to gets the new contents and the link stays. A target that is not a
regular file (``/dev/null``, ``/dev/stdout``, a FIFO, a terminal) is a stream: it is
opened and written directly, as mlir-opt does. Before anything runs, `check_output`
refuses a target that is one of the command's inputs (through any path or link) or an
existing directory.
"""

from __future__ import annotations

import io
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from typing import BinaryIO


class OutputError(Exception):
    """An output path that would overwrite an input or cannot hold a file."""


MAX_MEMBER_NAME_BYTES = 65_531
"""The longest name of an array in an ``.npz`` archive irc writes, in UTF-8 bytes: a zip
member's name is at most 65,535 bytes, ``.npy`` included."""


def npz_name_problem(name: str) -> str | None:
    """What keeps ``name`` from naming an array of an ``.npz`` archive (too long, a NUL,
    where zip readers end a name), or None."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_MEMBER_NAME_BYTES:
        return (f"a name of {size:,} bytes; irc takes names of at most {MAX_MEMBER_NAME_BYTES:,} bytes "
                f"(an .npz member's)")
    if "\0" in name:
        return "a name holding a NUL character, which an .npz member's name cannot"
    return None


_TEMPORARIES: set[str] = set()
"""The temporary files `write_atomically` has made and not yet renamed or removed: what a
tool stopped by a signal removes before it exits (`remove_temporaries`)."""

_DESCRIPTORS = ("/dev/stdout", "/dev/stderr", "/dev/stdin")
_DESCRIPTOR_DIRECTORIES = ("/dev/fd/", "/proc/self/fd/")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def is_stream(path: str) -> bool:
    """Whether ``path`` names something written directly rather than replaced: an
    existing file that is not a regular file or a directory (a device such as
    ``/dev/null``, a FIFO, a socket, a terminal), or one of the process's own
    descriptors (``/dev/stdout``, ``/dev/fd/N``), whatever it is open on."""
    absolute = os.path.abspath(path)
    if absolute in _DESCRIPTORS or absolute.startswith(_DESCRIPTOR_DIRECTORIES):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def discards_writes(path: str) -> bool:
    """Whether ``path`` is a character device (``/dev/null``, a terminal): writing to it
    replaces no file's contents, so it may also be an input or another output."""
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def same_output(a: str | None, b: str | None) -> bool:
    """Whether two outputs name one file that writing twice would clobber (two names of
    one regular file or FIFO; a character device such as ``/dev/null`` takes both)."""
    if not a or not b or discards_writes(a):
        return False
    return os.path.realpath(a) == os.path.realpath(b) or (os.path.exists(a) and _same_file(a, b))


def check_output(path: str, what: str, inputs: Iterable[tuple[str, str]] = ()) -> None:
    """Refuse ``path`` (described as ``what``, e.g. ``-o``) when it names one of
    ``inputs`` (``(path, description)`` pairs; a character device such as ``/dev/null``
    may be both) or a directory, or its directory does not exist."""
    if not path:
        raise OutputError(f"{what} needs a file name")
    if not discards_writes(path):
        for source, described in inputs:
            if source and os.path.exists(source) and _same_file(path, source):
                raise OutputError(f"{what} {path} would overwrite {described}; choose another path")
    if os.path.isdir(path):
        raise OutputError(f"{what} {path} is a directory; give a file name")
    if is_stream(path):
        if _is_fifo(path):
            _UNWRITTEN_FIFOS.add(os.path.abspath(path))
        return
    directory = os.path.dirname(_resolved(path))
    if not os.path.isdir(directory):
        raise OutputError(f"{what} {path}: directory {directory} does not exist")


_UNWRITTEN_FIFOS: set[str] = set()
"""FIFOs `check_output` accepted that nothing has written yet: a tool that fails opens
and closes them on its way out (`release_unwritten_fifos`), so that their readers see
the end of the file instead of waiting for ever."""


def _is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def release_unwritten_fifos() -> None:
    """Open and close, without waiting, each FIFO that was to be written and was not:
    its reader sees the end of the file (a FIFO nobody reads is left alone)."""
    for path in list(_UNWRITTEN_FIFOS):
        _UNWRITTEN_FIFOS.discard(path)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # no reader (ENXIO), or gone
            pass


def _resolved(path: str) -> str:
    """Where writing ``path`` puts the bytes: through symbolic links to their target."""
    return os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)


def _temporary_beside(path: str) -> tuple[int, str]:
    """A new temporary file in ``path``'s directory, open for writing: its name is
    registered in `_TEMPORARIES` before the file exists, so that a signal handled at any
    point (Python runs handlers between bytecodes) finds it to remove."""
    directory = os.path.dirname(path)
    while True:
        temporary = os.path.join(directory, f".irc-{secrets.token_hex(4)}.tmp")
        _TEMPORARIES.add(temporary)
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
            return os.open(temporary, flags, 0o600), temporary
        except FileExistsError:
            _TEMPORARIES.discard(temporary)


def remove_temporaries() -> None:
    """Remove every temporary file `write_atomically` still holds (a tool stopped by a
    signal calls this before it exits); safe to call from a signal handler."""
    for temporary in list(_TEMPORARIES):
        try:
            os.unlink(temporary)
        except OSError:
            pass
        _TEMPORARIES.discard(temporary)


class _Unseekable(io.RawIOBase):
    """A stream written in order only: ``/dev/null`` claims to seek, and a zip archive
    (`numpy.savez`) written at the offsets it reports would be garbage."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        return self._stream.write(data)

    def flush(self) -> None:
        if not self._stream.closed:
            self._stream.flush()


def _write_data(stream: BinaryIO, data: bytes | str | Callable[[BinaryIO], None]) -> None:
    if callable(data):
        data(stream)
    else:
        stream.write(data.encode() if isinstance(data, str) else data)
    stream.flush()


def write_atomically(path: str, data: bytes | str | Callable[[BinaryIO], None]) -> None:
    """Write ``data`` to ``path`` all at once: into a temporary file beside it, then one
    rename; on any failure, a signal included, ``path`` keeps what it held and the
    temporary file is gone. A symbolic link is written through (its target is replaced,
    the link kept); a stream (`is_stream`: ``/dev/null``, a FIFO) is written directly.
    ``data`` may be a function writing into the (binary; seekable unless the target is a
    stream) file, so a large output is streamed rather than built in memory first."""
    if is_stream(path):
        _UNWRITTEN_FIFOS.discard(os.path.abspath(path))
        with open(path, "wb") as stream:
            _write_data(_Unseekable(stream) if callable(data) else stream, data)
        return
    path = _resolved(path)
    handle, temporary = _temporary_beside(path)
    try:
        with os.fdopen(handle, "w+b") as stream:
            _write_data(stream, data)
            os.fsync(stream.fileno())
        if os.path.exists(path):
            os.chmod(temporary, os.stat(path).st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
        _TEMPORARIES.discard(temporary)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        _TEMPORARIES.discard(temporary)
        raise


class Collected(io.StringIO):
    """A text stream that keeps what was written after it is closed (``text``), so that a
    tool can write its output file only once everything succeeded."""

    def close(self) -> None:
        self.text = self.getvalue()
        super().close()
