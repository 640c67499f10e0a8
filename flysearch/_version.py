"""The version of flysearch, in one place (``flysearch.__version__`` and the provenance of results)."""

__version__ = "0.1.0"
