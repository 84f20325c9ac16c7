#!/usr/bin/env bash
# The main job: set up, then train a small GPT-style transformer for a few
# steps on the simulated NPU and print npusim's report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec npusim run --steps 5 examples/gpt_transformer.py --steps 5 "$@"
