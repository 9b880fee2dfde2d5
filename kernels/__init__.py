"""Pure array kernels for jaximp (installed as ``jaximp.kernels``)."""

from ._weights import column_shares, garson, gedeon, gedeon_shares, olden

__all__ = [
    "column_shares",
    "garson",
    "gedeon",
    "gedeon_shares",
    "olden",
]
