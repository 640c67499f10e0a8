"""The tests of the lab import its helper modules (``lab/benchmarks/_*.py``) as its scripts do: with
``lab/benchmarks/`` on ``sys.path``."""

from __future__ import annotations

import sys

from lab.tests._benchmarks import BENCHMARKS

if str(BENCHMARKS) not in sys.path:
    sys.path.append(str(BENCHMARKS))
