"""Numbers as a reader reads them (issue 42): ``800,000 ± 13``, never ``8e+05 ± 13``.

Significant digits as ``:g`` keeps them, but positional notation for every magnitude a
results table holds (scientific only below 1e-4 or from 1e15), with thousands separators
from 10,000 on.
"""

from __future__ import annotations

import math

#: Below this magnitude (or from :data:`HUGE`) a number keeps ``:g``'s scientific form.
TINY, HUGE = 1e-4, 1e15


def plain(value: float, sig: int = 4, sign: bool = False) -> str:
    """``value`` to ``sig`` significant digits in positional notation (``"+"`` first when
    ``sign``); ``"nan"``/``"inf"`` as :func:`format` writes them."""
    v = float(value)
    plus = "+" if sign else ""
    if not math.isfinite(v) or v == 0 or not TINY <= abs(v) < HUGE:
        return format(v, f"{plus}.{sig}g")
    places = sig - 1 - math.floor(math.log10(abs(v)))  # negative: round to tens, hundreds
    rounded = round(v, places)
    if rounded and math.floor(math.log10(abs(rounded))) != math.floor(math.log10(abs(v))):
        places -= 1  # 9.9996 -> 10.00 would show one digit too many
    decimals = max(places, 0)
    rounded = float(round(v, places))
    text = format(rounded, f"{plus},.{decimals}f" if abs(rounded) >= 10_000 else f"{plus}.{decimals}f")
    if "." in text:  # :g drops trailing zeros; so do we
        text = text.rstrip("0").rstrip(".")
    return text


def mean_std(mean: float, std: float) -> str:
    """The default table cell: ``mean ± std`` (4 and 2 significant digits)."""
    return f"{plain(mean, 4)} ± {plain(std, 2)}"
