"""External data of an ONNX model, read from the model's own folder and nowhere else.

A `TensorProto` may keep its bytes in another file (``data_location = EXTERNAL`` with
``location``/``offset``/``length`` entries, ONNX's ExternalData.md): initializers, sparse
initializers (values and indices), Constant and ConstantOfShape attributes, tensors in
the attributes of nested graphs (If/Loop/Scan bodies) and of model-local functions.
onnx's own readers resolve a location against whatever directory they are given, the
process's working directory for a model held in memory, so a model could make irc read
any file the user can read. `load_external_data` is the importer's one reader of such
references: it finds every `TensorProto` reachable from the model (a walk over the
protobuf's fields, so no place is forgotten), checks each reference (a relative
location with no ``..``, inside the folder after symbolic links are resolved, a regular
file, offset and length within it, exactly the tensor's size, within the size limits)
before a byte is read, and then puts the bytes into the tensor itself, so nothing after
it (onnx.checker, shape inference, folding) reads a file. A model given in memory has no
folder: any reference is refused.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Iterator

import onnx
from onnx import helper

from irc.frontend.onnx_graph import MAX_CONSTANT_BYTES, OnnxImportError

MAX_EXTERNAL_TENSOR_BYTES = MAX_CONSTANT_BYTES
"""The largest tensor read from an external file (the importer's bound on a constant)."""
MAX_MODEL_BYTES = (1 << 31) - 1
"""What a model may hold once its external data is read in: protobuf's limit on one
message, which onnx.checker and shape inference serialize."""
KEYS = ("location", "offset", "length", "checksum", "basepath")
"""The ``external_data`` keys ONNX writes; ``checksum`` and ``basepath`` are not used to
read (as in onnx's own reader)."""
SATURATED = 1 << 64
"""Sizes are counted up to this (beyond any file)."""
PACKED_BITS = {"UINT4": 4, "INT4": 4, "FLOAT4E2M1": 4, "UINT2": 2, "INT2": 2}
"""Element types stored several to a byte."""


def is_external(tensor: onnx.TensorProto) -> bool:
    """Whether `tensor` refers to an external file (either field says so)."""
    return tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data) > 0


def external_tensors(message, where: tuple[str, ...] = ()) -> Iterator[tuple[str, onnx.TensorProto]]:
    """Every `TensorProto` reachable from `message` that refers to an external file, with
    where it is (``node 'k' (Constant), attribute 'value'``)."""
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        for item in value if field.is_repeated else (value,):
            place = (*where, *_label(field.name, item))
            if isinstance(item, onnx.TensorProto):
                if is_external(item):
                    yield ", ".join(place), item
            else:
                yield from external_tensors(item, place)


def _label(field: str, item) -> tuple[str, ...]:
    """How one step of the walk is named in a message (no name for plain containers)."""
    name = getattr(item, "name", "")
    if isinstance(item, onnx.NodeProto):
        return (f"node '{name or (item.output[0] if item.output else '?')}' ({item.op_type})",)
    if isinstance(item, onnx.AttributeProto):
        return (f"attribute '{name}'",)
    if isinstance(item, onnx.FunctionProto):
        return (f"function '{name}'",)
    if field == "sparse_initializer":
        return (f"sparse initializer '{item.values.name}'",)
    if isinstance(item, onnx.TensorProto):
        if field in ("values", "indices"):  # of a sparse tensor, which is named already
            return (f"its {field}",)
        kind = "initializer" if field == "initializer" else "tensor"
        return (f"{kind} '{name}'" if name else kind,)
    return ()


def load_external_data(model: onnx.ModelProto, folder: str | None) -> None:
    """Read every external reference of `model` from `folder` into its tensor (see the
    module docstring); `OnnxImportError` naming the node and tensor for a reference that
    is refused. `folder` None: the model has none, so any reference is refused."""
    found = list(external_tensors(model))
    if not found:
        return
    if folder is None:
        where, tensor = found[0]
        raise OnnxImportError(
            f"{where}: its data is kept in an external file ('{_shown(_entries(where, tensor).get('location', ''))}'), "
            f"and a model given in memory has no folder to read it from; import the model from its file"
        )
    root = os.path.realpath(folder)
    # every reference is checked before any is read
    planned = [(where, tensor, _plan(where, tensor, root)) for where, tensor in found]
    room = MAX_MODEL_BYTES - model.ByteSize()
    for where, tensor, (_, _, _, expected) in planned:
        room -= expected
        if room < 0:
            raise OnnxImportError(
                f"{where}: with it, the model's external data comes to more than the {MAX_MODEL_BYTES:,} bytes "
                f"an ONNX model may hold in memory"
            )
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for where, tensor, plan in planned:
            tensor.raw_data = _read(where, root, root_fd, *plan)
            del tensor.external_data[:]
            tensor.data_location = onnx.TensorProto.DEFAULT
    finally:
        os.close(root_fd)


def _entries(where: str, tensor: onnx.TensorProto) -> dict[str, str]:
    """The ``external_data`` entries by key: each a known key, given once."""
    entries: dict[str, str] = {}
    for entry in tensor.external_data:
        if entry.key not in KEYS:
            raise OnnxImportError(f"{where}: external data key '{_shown(entry.key)}' is not one of {', '.join(KEYS)}")
        if entry.key in entries:
            raise OnnxImportError(f"{where}: external data key '{entry.key}' is given twice")
        entries[entry.key] = entry.value
    return entries


def _plan(where: str, tensor: onnx.TensorProto, root: str) -> tuple[list[str], int, int | None, int]:
    """What to read for one tensor (path components, offset, length, the bytes its shape
    and type take), checked by everything known without opening the file."""
    entries = _entries(where, tensor)
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        raise OnnxImportError(f"{where}: it has external data entries but its data_location is not EXTERNAL")
    parts = _location_parts(where, entries.get("location", ""))
    _check_inside(where, root, parts)
    offset = _number(where, entries, "offset", 0)
    length = _number(where, entries, "length", None)
    expected = _tensor_bytes(where, tensor)
    if expected > MAX_EXTERNAL_TENSOR_BYTES:
        size = f"{expected:,} bytes" if expected < SATURATED else "more bytes than any file holds"
        raise OnnxImportError(
            f"{where}: its external data ({size}: a tensor of shape {_shape_text(tensor.dims)}) is more than "
            f"the {MAX_EXTERNAL_TENSOR_BYTES:,} bytes irc reads for one tensor"
        )
    if length is not None and length != expected:
        raise OnnxImportError(
            f"{where}: its external data length is {length:,} bytes, but a tensor of shape "
            f"{_shape_text(tensor.dims)} and type {onnx.TensorProto.DataType.Name(tensor.data_type)} takes {expected:,}"
        )
    return parts, offset, length, expected


def _read(where: str, root: str, root_fd: int, parts: list[str], offset: int, length: int | None,
          expected: int) -> bytes:
    """One tensor's external bytes, checked against the file's size before the read."""
    location = _shown("/".join(parts))
    fd = _open_inside(where, root, root_fd, parts)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OnnxImportError(f"{where}: its external data file '{location}' is not a regular file")
        if offset > info.st_size:
            raise OnnxImportError(
                f"{where}: its external data offset {offset:,} is beyond the end of '{location}' "
                f"({info.st_size:,} bytes)"
            )
        available = info.st_size - offset
        if (length if length is not None else expected) > available:
            raise OnnxImportError(
                f"{where}: its external data ({expected:,} bytes from offset {offset:,}) reaches past the end of "
                f"'{location}' ({info.st_size:,} bytes)"
            )
        if length is None and available != expected:  # without a length, the rest of the file is the data
            raise OnnxImportError(
                f"{where}: its external data is the {available:,} bytes of '{location}' from offset {offset:,}, "
                f"but the tensor takes {expected:,} (give its length)"
            )
        return _read_exactly(where, fd, offset, expected, location)
    finally:
        os.close(fd)


def _shown(text: str) -> str:
    """`text` as a message shows it: on one line, at most 200 characters."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:200])
    return shown + ("..." if len(text) > 200 else "")


def _location_parts(where: str, location: str) -> list[str]:
    """A location's path components: relative, inside the folder by its text alone."""
    if not location:
        raise OnnxImportError(f"{where}: its data is kept in an external file, but it names no location")
    shown = _shown(location)
    if "\0" in location:
        raise OnnxImportError(f"{where}: its external data location holds a NUL character")
    if os.path.isabs(location) or location.startswith("\\") or (location[0].isalpha() and location[1:2] == ":"):
        raise OnnxImportError(
            f"{where}: its external data location '{shown}' is an absolute path; irc reads external data "
            f"only from files in the model's folder, named relative to it"
        )
    parts = [part for part in location.replace("\\", "/").split("/") if part not in ("", ".")]
    if ".." in parts:
        raise OnnxImportError(
            f"{where}: its external data location '{shown}' goes through '..'; irc reads external data only "
            f"from files in the model's folder, named without '..'"
        )
    if not parts:
        raise OnnxImportError(f"{where}: its external data location '{shown}' names the model's folder, not a file")
    return parts


def _check_inside(where: str, root: str, parts: list[str]) -> list[str]:
    """The components of `parts` below `root` once symbolic links are resolved; an error
    when that leaves `root`."""
    resolved = os.path.realpath(os.path.join(root, *parts))
    if os.path.commonpath([root, resolved]) != root or resolved == root:
        raise OnnxImportError(
            f"{where}: its external data location '{_shown('/'.join(parts))}' resolves to '{_shown(resolved)}', "
            f"outside the model's folder '{root}'; irc reads external data only from files in the model's folder"
        )
    return os.path.relpath(resolved, root).split(os.sep)


def _open_inside(where: str, root: str, root_fd: int, parts: list[str]) -> int:
    """Open the file at `parts` below `root`: symbolic links resolved and checked to stay
    inside it, then the resolved path opened one component at a time without following
    links, so a link swapped in meanwhile cannot lead outside."""
    location = _shown("/".join(parts))
    inside = _check_inside(where, root, parts)
    fd = os.dup(root_fd)
    try:
        for part in inside[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        # O_NONBLOCK: a FIFO opens at once (and is then refused as no regular file)
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        return os.open(inside[-1], flags, dir_fd=fd)
    except FileNotFoundError:
        raise OnnxImportError(
            f"{where}: its external data file '{location}' is not in the model's folder '{root}'"
        ) from None
    except OSError as error:
        raise OnnxImportError(f"{where}: cannot open its external data file '{location}': {error.strerror}") from None
    finally:
        os.close(fd)


def _read_exactly(where: str, fd: int, offset: int, count: int, location: str) -> bytes:
    chunks, done = [], 0
    while done < count:
        try:
            chunk = os.pread(fd, min(count - done, 1 << 26), offset + done)
        except OSError as error:
            raise OnnxImportError(
                f"{where}: cannot read its external data file '{location}': {error.strerror}"
            ) from None
        if not chunk:
            raise OnnxImportError(f"{where}: its external data file '{location}' ended early (it changed while read)")
        chunks.append(chunk)
        done += len(chunk)
    return b"".join(chunks)


def _number(where: str, entries: dict[str, str], key: str, default: int | None) -> int | None:
    text = entries.get(key)
    if text is None:
        return default
    if not text.isascii() or not text.isdigit() or len(text) > 20:
        raise OnnxImportError(
            f"{where}: its external data {key} '{_shown(text[:40])}' is not a byte count (a non-negative integer)"
        )
    return int(text)


def _tensor_bytes(where: str, tensor: onnx.TensorProto) -> int:
    """The bytes a tensor's dims and element type take (what its external data must hold)."""
    types = onnx.TensorProto.DataType
    name = types.Name(tensor.data_type) if tensor.data_type in types.values() else None
    if name in (None, "UNDEFINED", "STRING"):
        kind = name or f"element type {tensor.data_type}"
        raise OnnxImportError(f"{where}: a tensor of {kind} cannot keep its data in an external file")
    if any(d < 0 for d in tensor.dims):
        raise OnnxImportError(f"{where}: its shape {_shape_text(tensor.dims)} has a negative dimension")
    bits = PACKED_BITS.get(name) or helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize * 8
    count = 1
    for dim in tensor.dims:  # saturating: dims may be many and huge (a zero still gives 0)
        count = min(count * dim, SATURATED)
    return min(math.ceil(count * bits / 8), SATURATED)


def _shape_text(dims) -> str:
    return _shown("x".join(str(d) for d in dims)) if dims else "a scalar"
