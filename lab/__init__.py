"""The lab: what measures flysearch, outside the product. ``benchmarks/`` holds the scripts, the race
tables they read (``data/``) and what they wrote (``results/``); ``studies/`` the research experiment
files; ``paper/`` the paper built from those results; ``tests/`` the tests of the scripts. Code here
imports flysearch's public names only (``tests/test_architecture.py``)."""
