"""``torch_npu.utils.collect_env``: torch_npu's environment report.

One implementation serves this module and ``npusim collect-env``: :mod:`npusim_tools.collect_env`
(it must also work where npusim cannot load, so it lives with the triage tools)."""

from __future__ import annotations

from npusim_tools import collect_env as _report

from .._public_names import expose as _expose

__all__ = ["SystemEnv", "get_cann_version", "get_env_info", "get_pretty_env_info", "pretty_str", "main"]

# The report's own objects, under this module's name (PyTorch's public-API rule). SystemEnv is the
# one class of the report (a named tuple), so it reports this module wherever it is used.
SystemEnv = _expose(_report.SystemEnv, __name__)
get_cann_version = _expose(_report.get_cann_version, __name__)
get_env_info = _expose(_report.get_env_info, __name__)
get_pretty_env_info = _expose(_report.get_pretty_env_info, __name__)
pretty_str = _expose(_report.pretty_str, __name__)


def main() -> None:
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
