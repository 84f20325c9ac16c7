"""What the user wrote that made the host wait for the device, for the placement report.

The backend sees a synchronization as ``_local_scalar_dense`` or a copy to the host; the user wrote
``if tensor.all():``, ``tensor.tolist()``, ``scaler.step(optimizer)``, ``torch.save(state, path)``
or ``float(loss)``. :func:`describe` finds the innermost frame outside the libraries and labels the
sync with the source text of the expression that frame is executing (Python 3.11 code objects
carry the column span of every instruction): the call (``scaler.step(optimizer)``, ``model(x)``),
the truth test (``bool(t.all())``) or the subscript (``values[mask]``). Without the source file
the label is the dotted name the bytecode loads (``scaler.step(...)``), never a guess at the
receiver's type. Syncs made inside one call of a library function (``torch.save`` of a state dict
copies every tensor) are reported as one.

A sync with no frame of the program's own (npusim's launcher, or the profiler's exit inside
``npusim run --report``) is npusim's, not the user's: it is labelled :data:`NPUSIM_OWN` and the
reports leave it out.
"""

from __future__ import annotations

import dis
import functools
import linecache
import sys
import types

# The label of a synchronization that no frame of the program made (see the module's docstring).
NPUSIM_OWN = "<npusim>"
_LABEL_LIMIT = 80

_library_prefixes: tuple[str, ...] = ()
# The library call of the last sync, as a token stored in its frame's locals dict (not the frame
# itself: holding it would keep the call's locals, a state dict and its device memory, alive).
_CALL_TOKEN = "__npusim_sync_call__"
_last_call: int | None = None
_next_call = 0

_BOOL_OPCODES = {
    "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP",
    "UNARY_NOT", "TO_BOOL",
}
_CALL_OPCODES = {"CALL", "CALL_FUNCTION", "CALL_METHOD", "CALL_KW", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX"}
_NAME_OPCODES = {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_ATTR", "LOAD_METHOD"}
_MODULE_NAMES = {"torch", "np", "numpy", "torch_npu"}
_BUILTIN_CONVERSIONS = {"float", "int", "bool", "complex", "print", "str", "repr", "format", "len", "list"}


def set_library_prefixes(prefixes: list[str]) -> None:
    global _library_prefixes
    _library_prefixes = tuple(prefixes)


@functools.cache
def _standard_library() -> tuple[str, tuple[str, ...]]:
    """The standard library's folder and the package folders inside it (site-packages), which
    are not standard library: runpy, contextlib or copy between npusim and the program are library
    frames, a third-party package's are the first frames outside torch and npusim.

    Found on the first sync described, not at import: sysconfig costs ``import torch`` a
    millisecond or two, and most programs never describe a sync."""
    import site
    import sysconfig

    standard = sysconfig.get_paths().get("stdlib", "")
    packages = tuple(p.rstrip("/") + "/" for p in [*site.getsitepackages(), site.getusersitepackages()] if p)
    return (standard.rstrip("/") + "/" if standard else ""), packages


def _is_library(filename: str) -> bool:
    if not filename or filename.startswith("<frozen") or filename.startswith(_library_prefixes):
        return True
    standard, site_packages = _standard_library()
    return bool(standard) and filename.startswith(standard) and not filename.startswith(site_packages)


def _argval_name(instruction: dis.Instruction) -> str:
    value = instruction.argval
    return value if isinstance(value, str) else str(value)


def _callee(instructions: list[dis.Instruction], index: int) -> str:
    """The dotted name of the function the call at ``index`` calls, from the loads that precede it
    (simulating the stack of the expression backwards)."""
    call = instructions[index]
    arguments = call.arg or 0
    if call.opname in ("CALL_FUNCTION_EX",):
        arguments = 1
    # Walk back over the argument expressions: each argument leaves one value on the stack.
    needed = arguments
    i = index - 1
    while i >= 0 and instructions[i].opname in ("PRECALL", "KW_NAMES", "PUSH_NULL", "CACHE"):
        i -= 1
    while i >= 0 and needed > 0:
        effect = dis.stack_effect(instructions[i].opcode, instructions[i].arg) if instructions[i].opcode >= dis.HAVE_ARGUMENT else dis.stack_effect(instructions[i].opcode)
        needed -= effect
        i -= 1
    while i >= 0 and instructions[i].opname in ("PRECALL", "KW_NAMES", "PUSH_NULL", "CACHE"):
        i -= 1
    parts: list[str] = []
    while i >= 0 and instructions[i].opname in _NAME_OPCODES:
        parts.insert(0, _argval_name(instructions[i]))
        if instructions[i].opname not in ("LOAD_ATTR", "LOAD_METHOD"):
            return ".".join(parts)
        i -= 1
    # An attribute of an expression (`t.sum().item()`): a method of the expression's value.
    return ".".join(["<value>"] + parts) if parts else ""


@functools.lru_cache(maxsize=256)
def _instructions(code: types.CodeType) -> list[dis.Instruction]:
    return list(dis.get_instructions(code))


def _source_text(filename: str, positions) -> str:
    """The source text an instruction spans, on one line, or "" when it is not available."""
    if positions is None or positions.lineno is None or positions.col_offset is None:
        return ""
    last = positions.end_lineno or positions.lineno
    lines = [linecache.getline(filename, number) for number in range(positions.lineno, last + 1)]
    if not lines or not lines[0]:
        return ""
    if len(lines) == 1:
        text = lines[0][positions.col_offset:positions.end_col_offset]
    else:
        text = lines[0][positions.col_offset:] + "".join(lines[1:-1]) + lines[-1][:positions.end_col_offset]
    text = " ".join(text.split())
    return text if len(text) <= _LABEL_LIMIT else text[:_LABEL_LIMIT - 1] + "\u2026"


def _label(frame: types.FrameType) -> str:
    try:
        instructions = _instructions(frame.f_code)
    except Exception:
        return ""
    # f_lasti may point into an instruction's inline caches: take the instruction it belongs to.
    index = -1
    for i, instruction in enumerate(instructions):
        if instruction.offset > frame.f_lasti:
            break
        index = i
    if index < 0:
        return ""
    current = instructions[index]
    filename = frame.f_code.co_filename
    if current.opname in _BOOL_OPCODES:
        # The jump spans the whole statement (`if t.all(): ...`); the value it tests is what the
        # instruction before it computed (`t.all()`).
        previous = instructions[index - 1] if index > 0 else None
        text = _source_text(filename, getattr(previous, "positions", None)) if previous is not None else ""
        return f"bool({text})" if text else "bool(...)"
    text = _source_text(filename, getattr(current, "positions", None))
    if current.opname == "BINARY_SUBSCR":
        return text or "[...]"
    if current.opname in _CALL_OPCODES:
        if text:
            return text
        name = _callee(instructions, index)
        if not name:
            return ""
        head, _, attribute = name.rpartition(".")
        if not head:
            return f"{name}()" if name in _BUILTIN_CONVERSIONS else f"{name}(...)"
        if head == "<value>":
            return f"(...).{attribute}(...)"
        return f"{name}(...)"
    return ""


def describe() -> tuple[str, str, bool]:
    """(source location, label, same call as the previous sync) of the sync happening now."""
    global _last_call
    frame = sys._getframe(1)
    library_frame = None
    while frame is not None and _is_library(frame.f_code.co_filename):
        library_frame = frame
        frame = frame.f_back
    if frame is None:
        # Only library frames: npusim's own launcher or report machinery synchronized.
        return "", NPUSIM_OWN, False
    location = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    label = _label(frame)
    # A sync inside a Python library call (torch.save) belongs to that call: the outermost library
    # frame identifies it while it runs.
    call = None
    if library_frame is not None:
        # A token in the library frame's locals dict identifies its call: the dict lives as long
        # as the frame object, and a new call gets a new frame (and dict) even at the same address.
        try:
            local_names = library_frame.f_locals
            call = local_names.get(_CALL_TOKEN)
            if call is None:
                global _next_call
                _next_call += 1
                call = local_names[_CALL_TOKEN] = _next_call
        except Exception:
            call = None
    same_call = call is not None and call == _last_call
    _last_call = call
    return location, label, same_call
