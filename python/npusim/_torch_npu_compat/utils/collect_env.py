"""``torch_npu.utils.collect_env``: torch_npu's environment report.

One implementation serves this module and ``npusim collect-env``: :mod:`npusim_tools.collect_env`
(it must also work where npusim cannot load, so it lives with the triage tools)."""

from __future__ import annotations

from npusim_tools.collect_env import SystemEnv, get_cann_version, get_env_info, get_pretty_env_info, pretty_str

__all__ = ["SystemEnv", "get_cann_version", "get_env_info", "get_pretty_env_info", "pretty_str", "main"]


def main() -> None:
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
