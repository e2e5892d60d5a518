"""``import sensetree``: every name of ``__all__`` resolves, each operation's parameter and result types
and the error tree are among them, and importing the package alone loads none of them."""

from __future__ import annotations

import subprocess
import sys

import sensetree
from sensetree.errors import SenseTreeError
from sensetree.operations import OPERATIONS


def test_every_public_name_resolves():
    for name in sensetree.__all__:
        assert getattr(sensetree, name) is not None, name
    assert set(sensetree.__all__) <= set(dir(sensetree))


def test_the_operations_and_the_errors_are_public():
    public = {getattr(sensetree, name) for name in sensetree.__all__ if isinstance(getattr(sensetree, name), type)}
    for op in OPERATIONS.values():
        assert op.params in public and op.result in public, op.name
    assert sensetree.Engine.__module__ == "sensetree.engine"
    errors = {cls for cls in public if isinstance(cls, type) and issubclass(cls, SenseTreeError)}
    assert {"SenseTreeError", "BadInput", "NotFound", "OutsideRoots", "WriterBusy"} <= {c.__name__ for c in errors}


def test_importing_the_package_loads_nothing_else():
    probe = ("import sys, sensetree\n"
             "print(','.join(sorted(m for m in sys.modules if m.startswith('sensetree.'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
