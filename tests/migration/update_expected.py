"""Rewrite expected/<program>/*.csv from a migration of the corpus. Review the diff before
committing: the expected files are the reference the tests compare with."""

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from migration_helpers import CORPUS, EXPECTED, REPORTS  # noqa: E402
from npusim.migration import migrate  # noqa: E402

with tempfile.TemporaryDirectory() as out:
    for program in sorted(p.name for p in CORPUS.iterdir() if p.is_dir()):
        result = migrate(str(CORPUS / program), out)
        target = EXPECTED / program
        target.mkdir(parents=True, exist_ok=True)
        for report in REPORTS:
            shutil.copyfile(Path(result.output) / report, target / report)
        print(f"{program}: {len(result.changed_files)} files changed")
