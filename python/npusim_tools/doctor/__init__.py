"""``npusim doctor``: checks the chain that must line up for torch_npu code to run.

Sections (each check passes, warns or fails, with a one-line fix):

- npusim's own chain (:mod:`.chain`): Python, the torch npusim was built against vs the one
  imported, the simulated CANN and driver vs the compatibility table, environment variables,
  visible devices. Probed in a subprocess so that a broken import cannot take the doctor down.
- A real Ascend installation, read-only (:mod:`.install`): driver and toolkit version files,
  ``set_env.sh`` and the variables it sets, the installed torch / torch-npu against the table,
  a CUDA torch next to torch_npu.
- Shared libraries (:mod:`.libraries`): how the dynamic linker resolves ``libascendcl.so``,
  ``libhccl.so``, ``libruntime.so``, ... and whether a stale toolkit shadows the sourced one.
- plog triage (:mod:`.plog`): errors of past runs grouped by module and error code, with
  explanations (:mod:`.known_messages`) and the first failing call.

The doctor only reads: it never writes, never sources anything and never imports torch_npu.
"""

from npusim_tools.doctor.report import Check, Report

__all__ = ["Check", "Report"]
