"""Every operation has exactly one handler, bound by ``@handles``, whose annotations name the
operation's parameter and result types; ``Engine.run`` reaches it from the parameters alone."""

from __future__ import annotations

import inspect
import typing

import pytest

from sensetree.context import Context
from sensetree.handlers import HANDLERS, handler_for
from sensetree.handlers.registry import handles
from sensetree.operations import OPERATIONS, SearchParams


def test_every_operation_has_one_handler_typed_as_its_declaration():
    assert set(HANDLERS) == set(OPERATIONS)
    for name, op in OPERATIONS.items():
        handler = HANDLERS[name]
        hints = typing.get_type_hints(handler)
        first, second, *rest = inspect.signature(handler).parameters.values()
        assert hints[first.name] is Context, f"{handler.__qualname__} takes the Context first"
        assert hints[second.name] is op.params, f"{handler.__qualname__} takes {op.params.__name__}"
        assert hints["return"] is op.result, f"{handler.__qualname__} returns {op.result.__name__}"
        assert all(p.default is not inspect.Parameter.empty for p in rest), handler.__qualname__
        assert ("on_progress" in {p.name for p in rest}) == op.progress, f"{name}: progress=True iff on_progress"


def test_each_parameter_class_belongs_to_one_operation():
    taken = [op.params for op in OPERATIONS.values()]
    assert len(taken) == len(set(taken))


def test_a_second_handler_for_an_operation_is_refused():
    def another(ctx: Context, params: SearchParams) -> object:
        raise AssertionError

    with pytest.raises(TypeError, match="two handlers"):
        handles(another)
    assert handler_for(SearchParams) is HANDLERS["search"]


def test_parameters_of_no_operation_are_refused():
    class Stray:
        pass

    with pytest.raises(TypeError, match="no operation"):
        handler_for(Stray)
