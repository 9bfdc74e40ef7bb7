"""``python -m dpexp.cli``: the same as the ``dpexp`` console script."""

from __future__ import annotations

if __name__ == "__main__":  # imported (not run) by tests that import every module
    from dpexp.cli import main

    main()
