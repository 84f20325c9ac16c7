"""``msprobe.pytorch`` as npusim serves it: ``PrecisionDebugger`` (``start`` / ``stop`` / ``step``
/ ``set_init_step``, tasks ``statistics`` and ``tensor``, levels L0, L1 and mix, ``scope``,
``list``, ``data_mode``, ``summary_mode``, ``risk_level``), ``seed_all`` and ``compare``.

Not served (each raises a clear error): the other tasks (``acc_check``, ``overflow_check``,
``free_benchmark``, ``structure``, ...), levels L2 and debug, ``PrecisionDebugger.save``,
``module_dump``, ``token_range``, the monitor (``TrainerMon``) and the torchair dump.
"""

from msprobe.pytorch.precision_debugger import (  # noqa: F401
    MsprobeException,
    PrecisionDebugger,
    module_dump,
    module_dump_end,
    seed_all,
)
from msprobe.pytorch.compare import compare  # noqa: F401

__all__ = ["PrecisionDebugger", "seed_all", "compare", "module_dump", "module_dump_end", "MsprobeException"]
