"""The settings and the models they name: the settings view, one setting changed, the model catalogue,
an endpoint tried before it is saved, what this install has and lacks (``doctor``) and getting it."""

from __future__ import annotations

from typing import Callable

from ..answers import Diagnosis, Download, ModelsCatalogue, ProbeReport, Pulled, SettingChanged, SettingsView
from ..config import WIPES_INDEX, NeedsConfirmation, check, describe, parse_value
from ..context import Context
from ..diagnosis import diagnosis
from ..errors import ReadOnlyIndex
from ..operations import DoctorParams, ModelsParams, ProbeParams, PullParams, SetParams, SettingsParams
from ..store.manifest import SEARCH_SETTINGS
from .registry import handles


@handles
def pull(ctx: Context, params: PullParams, on_progress: Callable[[Download], None] | None = None) -> Pulled:
    """Download a reranker into the models folder (online only); ``ModelDownloadError`` says why not.
    ``on_progress`` hears how far each file is."""

    def heard(file: str, done: int, total: int) -> None:
        if on_progress:
            on_progress(Download(file, done, total))

    return Pulled(params.name, str(ctx.models.pull_reranker(params.name, heard)))


@handles
def doctor(ctx: Context, params: DoctorParams) -> Diagnosis:
    """What this install has per model role, what is missing and how to get it, where things live."""
    return diagnosis(ctx.data_dir)  # diagnosis.py: `sensetree doctor` calls it without opening the stores


@handles
def settings(ctx: Context, params: SettingsParams) -> SettingsView:
    """Every setting with its value, default, help and type, and the models per role (the web app's
    settings panel, ``sensetree config get``)."""
    return SettingsView(describe(ctx.settings), ctx.models.by_role())


@handles
def set_setting(ctx: Context, params: SetParams) -> SettingChanged:
    """Change one setting, its value read by the setting's type (JSON, or text as typed at a terminal). A
    model that does not exist is refused before anything is written or wiped; a change that would wipe the
    index says what, and is made only when confirmed (``--yes``, ``"confirm": true``)."""
    key = params.key
    # text is read by the key's type, as typed at a terminal; any other JSON value must be of that type already
    # (a list is no text, and no number): ``check`` refuses it with the key's range
    value = parse_value(key, params.value) if isinstance(params.value, str) else check(key, params.value)
    if ctx.read_only and key in SEARCH_SETTINGS:
        raise ReadOnlyIndex(f"{key} is set where the index is written; this node searches as the writer says")
    wipes = ctx.setting_wipes(key, value)
    if wipes and not params.confirm:
        raise NeedsConfirmation(
            f"changing {key} to {value!r}: {wipes}. Nothing was changed; confirm to go "
            f'on (`sensetree config set {key} VALUE --yes`, or "confirm": true in '
            "PUT /api/settings)"
        )
    if ctx.settings.unreadable and key not in WIPES_INDEX:
        ctx.refuse_wipe_on_a_guess()
    ctx.settings.set(key, value)
    if key.startswith(("embedding.", "compute.")):
        ctx.models.forget_embedder()
    notice = None
    if key in WIPES_INDEX and not ctx.read_only:  # a search node follows the writer's vectors
        # confirmed, this also makes a change held since settings.toml named the model by hand
        notice = ctx.follow_model(params.confirm)
    return SettingChanged(key, ctx.settings[key], notice)


@handles
def models(ctx: Context, params: ModelsParams) -> ModelsCatalogue:
    return ModelsCatalogue(**ctx.models.catalogue())


@handles
def probe(ctx: Context, params: ProbeParams) -> ProbeReport:
    """Try an endpoint before saving it (the settings page's "test" buttons)."""
    return ctx.models.probe(params.role, params.base_url, params.model, params.api_key)
