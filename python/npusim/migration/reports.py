"""The files the migration and analysis tools write: CSVs with msFmkTransplt's names and columns
(contract §15) and the rotating log ``msFmkTranspltlog.txt`` (1 MB per file, at most 10)."""

from __future__ import annotations

import csv
import logging
import logging.handlers
import os

API_COLUMNS = ["File", "Start Line", "End Line", "OP", "Tips"]
CHANGE_COLUMNS = ["File", "Start Line", "End Line", "Operation Type", "Message"]
CUDA_OP_COLUMNS = ["File", "Api"]
AFFINITY_COLUMNS = ["File", "Start Line", "End Line", "Api Type", "Api Call Name", "Affinity Api Name"]
THIRD_PARTY_COLUMNS = ["File", "3rd-party API", "Message"]
TORCH_TO_THIRD_PARTY_COLUMNS = ["Torch API", "Affected 3rd-party API"]
DYNAMIC_SHAPE_COLUMNS = [
    "Function Name", "File Path", "Line Number", "Call Stack", "Input Shape Range", "Output Shape Range",
]

LOG_NAME = "msFmkTranspltlog.txt"
LOG_BYTES = 1024 * 1024
LOG_FILES = 10


def write_csv(path: str, columns: list[str], rows: list[list]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)


def read_csv(path: str) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.reader(file))


def open_log(folder: str, name: str = "npusim.migration") -> logging.Logger:
    """A logger that writes ``folder/msFmkTranspltlog.txt`` (rotated at 1 MB, 10 files kept)."""
    logger = logging.getLogger(f"{name}.{os.path.abspath(folder)}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    handler = logging.handlers.RotatingFileHandler(
        os.path.join(folder, LOG_NAME), maxBytes=LOG_BYTES, backupCount=LOG_FILES - 1, encoding="utf-8"
    )
    handler.setFormatter(logging.Formatter("%(asctime)s [%(levelname)s] %(message)s"))
    logger.addHandler(handler)
    return logger


def close_log(logger: logging.Logger) -> None:
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
