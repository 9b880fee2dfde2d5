"""The version of jaximp, in one place (the package and its reports read it here)."""

__version__ = "0.1.0"
