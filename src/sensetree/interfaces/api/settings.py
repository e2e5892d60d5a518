"""Probing an endpoint before saving it (reading and changing the settings are engine operations:
``operations.py``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from .bodies import EndpointTestBody
from .context import ApiContext, context

router = APIRouter()


@router.post("/api/endpoint-test", summary="Is an endpoint reachable, does it have the model, which dimension")
def endpoint_test(body: EndpointTestBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return ctx.engine.probe_endpoint(body.role, body.base_url, body.model, body.api_key).as_dict()
