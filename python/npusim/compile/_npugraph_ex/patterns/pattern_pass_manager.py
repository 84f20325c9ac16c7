"""The replacements applied to every graph npugraph_ex compiles."""

from npusim.compile.npugraph_ex_backend import register_replacement

__all__ = ["register_replacement"]
