"""Custom CUDA operators in C++/CUDA sources: what ``cuda_op_list.csv`` lists (contract §15:
``PYBIND11_MODULE`` ``m.def``, ``TORCH_LIBRARY`` ``m.def`` / ``m.impl``) plus the
``__global__`` kernels of ``.cu`` files. Each needs an Ascend C port; nothing here is migrated."""

from __future__ import annotations

import re

SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh")

_BLOCK = re.compile(r"\b(PYBIND11_MODULE|TORCH_LIBRARY|TORCH_LIBRARY_FRAGMENT|TORCH_LIBRARY_IMPL)\s*\(([^)]*)\)\s*\{")
_DEF = re.compile(r"\b\w+\s*\.\s*(def|impl)\s*\(\s*(?:TORCH_SELECTIVE_SCHEMA\s*\(\s*)?\"([^\"(]+)")
_GLOBAL = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+)?(?:inline\s+)?[\w:<>,\s\*&]*?\b(\w+)\s*\(")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _block_body(text: str, start: int) -> str:
    """The text of the brace block that opens at ``start`` - 1."""
    depth = 1
    index = start
    while index < len(text) and depth:
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        index += 1
    return text[start:index]


def scan(text: str, suffix: str) -> list[str]:
    """The custom operators declared in one C++/CUDA source, in order of appearance."""
    code = _COMMENT.sub(lambda m: " " * len(m.group(0)) if "\n" not in m.group(0) else "\n" * m.group(0).count("\n"), text)
    found: list[str] = []
    for block in _BLOCK.finditer(code):
        kind, arguments = block.group(1), [a.strip() for a in block.group(2).split(",")]
        body = _block_body(code, block.end())
        namespace = arguments[0] if arguments else ""
        for definition in _DEF.finditer(body):
            verb, name = definition.group(1), definition.group(2).strip()
            if kind == "PYBIND11_MODULE":
                found.append(name)
            elif kind == "TORCH_LIBRARY_IMPL" and len(arguments) > 1:
                found.append(f"{namespace}::{name} ({arguments[1]})")
            else:
                found.append(f"{namespace}::{name}")
    if suffix in (".cu", ".cuh"):
        for kernel in _GLOBAL.finditer(code):
            found.append(f"{kernel.group(1)} (__global__ kernel)")
    return found
