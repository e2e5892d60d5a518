"""Which handler answers which operation: ``@handles`` binds a function to the operation whose
parameter class its second parameter is annotated with.

A handler is ``def name(ctx: Context, params: XParams, ...) -> XResult`` in the module of its area;
``tests/test_handlers.py`` checks that every operation of ``operations.OPERATIONS`` has exactly one, and
that its annotations name the operation's parameter and result types.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any, Callable, TypeVar

from ..operations import OPERATIONS, Operation

F = TypeVar("F", bound=Callable[..., Any])

HANDLERS: dict[str, Callable[..., Any]] = {}  # operation name -> its handler
_BY_PARAMS: dict[type, Operation] = {op.params: op for op in OPERATIONS.values()}


def operation_taking(params: type) -> Operation:
    """The operation whose parameter class is ``params``."""
    try:
        return _BY_PARAMS[params]
    except KeyError:
        raise TypeError(f"{params.__name__} is no operation's parameter class (operations.py)") from None


def handles(handler: F) -> F:
    """Register ``handler`` as the answer to the operation its ``params`` annotation names."""
    hints = typing.get_type_hints(handler)
    second = list(inspect.signature(handler).parameters)[1]
    op = operation_taking(hints[second])
    if op.name in HANDLERS:
        raise TypeError(f"{op.name} has two handlers: {HANDLERS[op.name].__qualname__} and {handler.__qualname__}")
    HANDLERS[op.name] = handler
    return handler
