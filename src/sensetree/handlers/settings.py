"""The settings and the models they name: the settings view, one setting changed, the model catalogue,
an endpoint tried before it is saved."""

from __future__ import annotations

import json

from ..answers import ModelsCatalogue, ProbeReport, SettingChanged, SettingsView
from ..config import describe, parse_value
from ..context import Context
from ..errors import ReadOnlyIndex
from ..operations import ModelsParams, ProbeParams, SetParams, SettingsParams
from ..store.manifest import SEARCH_SETTINGS
from .registry import handles


@handles
def settings(ctx: Context, params: SettingsParams) -> SettingsView:
    """Every setting with its value, default, help and type, and the models per role (the web app's
    settings panel, ``sensetree config get``)."""
    return SettingsView(describe(ctx.settings), ctx.models.by_role())


@handles
def set_setting(ctx: Context, params: SetParams) -> SettingChanged:
    """Change one setting, its value read by the setting's type (JSON, or text as typed at a terminal);
    a change of embedding model wipes the vectors at once and says so."""
    key = params.key
    value = parse_value(key, params.value if isinstance(params.value, str) else json.dumps(params.value))
    if ctx.read_only and key in SEARCH_SETTINGS:
        raise ReadOnlyIndex(f"{key} is set where the index is written; this node searches as the writer says")
    before = ctx.models.expected_identity()
    ctx.settings.set(key, value)
    if key.startswith(("embedding.", "compute.")):
        ctx.models.forget_embedder()
    notice = None
    if ctx.models.expected_identity() != before and not ctx.read_only:  # a search node follows the writer's vectors
        notice = ctx.writable().match_model(ctx.models.expected_identity())
    return SettingChanged(key, ctx.settings[key], notice)


@handles
def models(ctx: Context, params: ModelsParams) -> ModelsCatalogue:
    return ModelsCatalogue(**ctx.models.catalogue())


@handles
def probe(ctx: Context, params: ProbeParams) -> ProbeReport:
    """Try an endpoint before saving it (the settings page's "test" buttons)."""
    return ctx.models.probe(params.role, params.base_url, params.model, params.api_key)
