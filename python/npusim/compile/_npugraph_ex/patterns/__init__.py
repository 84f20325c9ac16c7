"""npugraph_ex's FX pattern passes."""

from . import pattern_pass_manager

__all__ = ["pattern_pass_manager"]
