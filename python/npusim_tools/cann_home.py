"""``npusim cann-home``: print the root of npusim's CANN toolkit tree.

The tree (headers, ``lib64/libascendcl.so``, ``set_env.sh``; see docs/cann-toolkit.md) ships in
the npusim package as ``npusim/cann``. This module finds it without importing npusim (which
imports torch), so that ``source "$(npusim cann-home)/set_env.sh"`` is quick.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Sequence

__all__ = ["cann_home", "main"]


def cann_home() -> str:
    """The absolute path of the toolkit tree; raises FileNotFoundError when it is not built."""
    spec = importlib.util.find_spec("npusim")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the npusim package is not installed")
    for location in spec.submodule_search_locations:
        root = os.path.join(location, "cann")
        if os.path.isfile(os.path.join(root, "include", "acl", "acl.h")):
            return os.path.realpath(root)
    raise FileNotFoundError(
        "npusim's CANN toolkit tree is missing (expected npusim/cann/include/acl/acl.h): in a source "
        "checkout, run scripts/dev-build.sh"
    )


def main(arguments: Sequence[str]) -> int:
    if arguments and arguments[0] in ("-h", "--help"):
        print("usage: npusim cann-home\n\nPrints the root of npusim's CANN toolkit tree; use it as\n"
              '  source "$(npusim cann-home)/set_env.sh"')
        return 0
    if arguments:
        print(f"npusim cann-home: unexpected arguments: {' '.join(arguments)}", file=sys.stderr)
        return 2
    try:
        print(cann_home())
    except FileNotFoundError as error:
        print(f"npusim cann-home: {error}", file=sys.stderr)
        return 1
    return 0
