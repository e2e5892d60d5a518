"""Settings (design §8), the models per role, and probing an endpoint before saving it."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, HTTPException

from ...config import SettingsError, parse_value
from .bodies import EndpointTestBody, SettingBody
from .context import ApiContext, context

router = APIRouter()


@router.get("/api/settings", summary="Every setting and the models per role")
def settings(ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return {"settings": ctx.engine.settings_help(), "models": ctx.engine.models_by_role()}


@router.put("/api/settings", summary="Change one setting; a new embedding model re-indexes everything")
def change_setting(body: SettingBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    try:
        value = parse_value(body.key, body.value if isinstance(body.value, str) else json.dumps(body.value))
    except SettingsError as exc:
        raise HTTPException(422, str(exc)) from None
    with ctx.exclusive():
        notice = ctx.engine.set_setting(body.key, value)
    if body.key.startswith("chat."):
        ctx.chats.reset()
    return {"key": body.key, "value": ctx.engine.settings[body.key], "notice": notice}


@router.post("/api/endpoint-test", summary="Is an endpoint reachable, does it have the model, which dimension")
def endpoint_test(body: EndpointTestBody, ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return ctx.engine.probe_endpoint(body.role, body.base_url, body.model, body.api_key).as_dict()
