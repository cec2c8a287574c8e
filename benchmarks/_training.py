"""Imported first by the benchmarks that read the fits' library: puts training/ (fit_decisions, _bundled, ...) on
sys.path, so `from fit_decisions import question_files` works from benchmarks/ as it does from training/."""

import sys
from pathlib import Path

TRAINING = Path(__file__).resolve().parents[1] / "training"
if str(TRAINING) not in sys.path:
    sys.path.insert(0, str(TRAINING))
