"""``torch_npu.utils._path_manager``: torch_npu's checks and safe operations on the paths a
program hands it (dump and profiling directories, saved files).

torch_npu's tests and tools import :class:`PathManager` from here. The checks are torch_npu's:
a path that is too long, a symbolic link, unusual characters or an unreadable/unwritable
directory only warn; a missing directory, a file where a directory is expected (and the
reverse) and failing system calls raise ``RuntimeError`` with torch_npu's error code. Files and
directories are created with torch_npu's permissions (0o640 / 0o750).
"""

from __future__ import annotations

import os
import re
import shutil
import warnings

from npusim._error_code import ErrCode, pta_error

__all__ = ["PathManager"]

# Letters, digits, separators, whitespace and CJK ideographs: anything else only warns.
_ACCEPTED_PATH = re.compile(r"(\.|/|_|-|\s|[~0-9a-zA-Z]|[\u4e00-\u9fa5])+")


class PathManager:
    MAX_PATH_LENGTH = 4096
    MAX_FILE_NAME_LENGTH = 255
    DATA_FILE_AUTHORITY = 0o640
    DATA_DIR_AUTHORITY = 0o750

    @classmethod
    def check_input_directory_path(cls, path: str):
        """Checks a directory path the program gave; it need not exist, but must not be a file."""
        cls._input_path_common_check(path)
        if os.path.isfile(path):
            # torch_npu's text names no path here (its message is not formatted).
            raise RuntimeError("Invalid input path is a file path: {path}" + pta_error(ErrCode.PARAM))

    @classmethod
    def check_input_file_path(cls, path: str):
        """Checks a file path the program gave; it need not exist, but must not be a directory."""
        cls._input_path_common_check(path)
        if os.path.isdir(path):
            raise RuntimeError("Invalid input path is a directory path: {path}" + pta_error(ErrCode.PARAM))

    @classmethod
    def check_directory_path_writeable(cls, path):
        """Raises when ``path`` does not exist; warns on a link or missing write permission."""
        cls._check_existing(path, os.W_OK)

    @classmethod
    def check_directory_path_readable(cls, path):
        """Raises when ``path`` does not exist; warns on a link or missing read permission."""
        cls._check_existing(path, os.R_OK)

    @classmethod
    def remove_path_safety(cls, path: str):
        """Removes the directory tree at ``path``; nothing to do when it does not exist."""
        message = f"Failed to remove path: {path}"
        if os.path.islink(path):
            warnings.warn(message)
        if not os.path.exists(path):
            return
        try:
            shutil.rmtree(path)
        except FileNotFoundError:
            return
        except Exception as error:
            raise RuntimeError(message + pta_error(ErrCode.SYSCALL)) from error

    @classmethod
    def remove_file_safety(cls, file: str):
        """Removes the file ``file``; nothing to do when it does not exist."""
        message = f"Failed to remove file: {file}"
        if os.path.islink(file):
            warnings.warn(message)
        if not os.path.exists(file):
            return
        try:
            os.remove(file)
        except FileExistsError:
            return
        except Exception as error:
            raise RuntimeError(message + pta_error(ErrCode.SYSCALL)) from error

    @classmethod
    def make_dir_safety(cls, path: str):
        """Creates ``path`` (and its parents) with mode 0o750 unless it exists."""
        message = f"Failed to make directory: {path}"
        if os.path.islink(path):
            warnings.warn(message)
        if os.path.exists(path):
            return
        try:
            os.makedirs(path, mode=cls.DATA_DIR_AUTHORITY, exist_ok=True)
        except Exception as error:
            raise RuntimeError(message + pta_error(ErrCode.SYSCALL)) from error

    @classmethod
    def create_file_safety(cls, path: str):
        """Creates the empty file ``path`` with mode 0o640 unless it exists."""
        message = f"Failed to create file: {path}"
        if os.path.islink(path):
            warnings.warn(message)
        if os.path.exists(path):
            return
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, cls.DATA_FILE_AUTHORITY))
        except Exception as error:
            raise RuntimeError(message + pta_error(ErrCode.SYSCALL)) from error

    @classmethod
    def check_path_is_readable(cls, path: str):
        return os.access(path, os.R_OK)

    @classmethod
    def check_path_is_writeable(cls, path: str):
        return os.access(path, os.W_OK)

    @classmethod
    def _check_existing(cls, path, access_mode):
        if not os.path.exists(path):
            raise RuntimeError(f"The path does not exist: {path}")
        if os.path.islink(path):
            warnings.warn(f"Invalid path is a symbolic link: {path}")
        if not os.access(path, access_mode):
            warnings.warn(f"The path permission check failed: {path}")

    @classmethod
    def _input_path_common_check(cls, path: str):
        if len(path) > cls.MAX_PATH_LENGTH:
            warnings.warn("Length of input path exceeds the limit.")
        if os.path.islink(path):
            warnings.warn(f"Invalid input path is a symbolic link: {path}")
        if not _ACCEPTED_PATH.fullmatch(path):
            warnings.warn(f"Invalid input path: {path}")
        if any(len(name) > cls.MAX_FILE_NAME_LENGTH for name in path.split("/")):
            warnings.warn("Length of input path exceeds the limit.")
