"""``torch_npu.utils.utils``: torch_npu's console log helpers and the interactive-session test,
which its tools and tests import from here."""

from npusim._error_code import is_interactive_session as _is_interactive_command_line  # noqa: F401
from npusim.npu._console_log import (  # noqa: F401
    _print_error_log,
    _print_info_log,
    _print_log,
    _print_warn_log,
)

__all__: list[str] = []
