// SenseTree in the browser: one page over the HTTP API of `sensetree serve`.

import { api, ApiError, events, hasToken, picture, whenUnauthorized } from "./api.js";
import {
  baseName, bytes, duration, fill, h, icon, isTyping, marked, parentOf, percent, rate, when,
} from "./dom.js";

const $ = (id) => document.getElementById(id);

const state = {
  tab: "search",
  view: "list",          // list | tree | both
  query: "",             // the query the results on screen answer
  terms: [],             // its words to mark, as the search chose them (store/terms.py: one rule everywhere)
  like: null,            // or the file they are like ("More like this")
  results: [],
  selected: -1,
  tree: null,
  treeQuery: null,       // the query and scope the tree on screen answers
  scope: null,           // the current folder
  scopeOn: false,        // "limit to current folder"
  searchSeq: 0,          // answers to older searches are dropped
  unconfirmedChange: "", // a settings change that would wipe the index, held until confirmed (status)
  types: new Set(),      // the type chips that are on (each a comma-separated list of types)
  preview: null,         // {path, chunk}
  pageImage: null,       // the object URL of the PDF page the preview shows, freed when the next one comes
  conversation: null,
  chatAbort: null,
  settings: null,
  explorerLoaded: false,
  detailPath: null,
};

// ---------------------------------------------------------------------------------------------
// small pieces

function toast(message, kind = "info") {
  const element = h(`div.toast.${kind}`, { role: kind === "error" ? "alert" : "status" }, message);
  $("toasts").append(element);
  setTimeout(() => element.remove(), kind === "error" ? 7000 : 3500);
}

/** Run an action; a failure becomes a toast instead of an unhandled rejection. */
async function attempt(action, failureLabel) {
  try {
    return await action();
  } catch (error) {
    if (error.name === "AbortError" || (error instanceof ApiError && error.status === 401)) return undefined;
    toast(`${failureLabel}: ${error.message}`, "error");
    return undefined;
  }
}

const QUEUE_LIST_LIMIT = 200; // files of each waiting list the queue page shows (the counts say how many wait)
// What each phase means to the user: "keyword" files are findable by their words, not yet by meaning.
const STATUS_LABELS = { keyword: "keyword-ready" };
const STATUS_TITLES = {
  pending: "waiting to be read",
  keyword: "findable by exact words and names; its meaning (vectors) comes next",
  indexed: "findable by words and by meaning",
};

function statusBadge(status) {
  if (!status) return null;
  const slug = status.replace(/\s+/g, "-");
  return h(`span.badge.status-${slug}`, { "data-testid": "status-badge", "data-status": status, title: STATUS_TITLES[status] ?? "" },
    STATUS_LABELS[status] ?? status);
}

function confirmDialog({ title, message, confirm }) {
  const dialog = $("confirm-dialog");
  $("confirm-title").textContent = title;
  $("confirm-message").textContent = message;
  $("confirm-ok").textContent = confirm;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

function effectiveScope() {
  return state.scopeOn && state.scope ? state.scope : undefined;
}

// ---------------------------------------------------------------------------------------------
// tabs and views

function showTab(tab) {
  state.tab = tab;
  for (const button of document.querySelectorAll(".nav-item[data-tab]")) {
    button.classList.toggle("active", button.dataset.tab === tab);
  }
  for (const name of ["search", "explorer", "queue", "settings"]) $(`view-${name}`).hidden = name !== tab;
  if (tab === "explorer" && !state.explorerLoaded) loadExplorer();
  if (tab === "settings") loadSettings();
  if (tab === "queue") pollQueue();
}

function setView(view) {
  state.view = view;
  $("search-panes").dataset.layout = view;
  for (const button of $("view-switch").querySelectorAll("button")) {
    button.classList.toggle("active", button.dataset.view === view);
  }
  if (state.tab !== "search") showTab("search");
  if (view !== "list" && state.query && state.treeQuery !== treeKey()) loadTree();
}

// ---------------------------------------------------------------------------------------------
// the current folder

function setScope(path) {
  state.scope = path || null;
  state.scopeOn = Boolean(path);
  renderScope();
  if (state.query) search();
}

function renderScope() {
  const toggle = $("scope-toggle");
  toggle.disabled = !state.scope;
  toggle.checked = state.scopeOn && Boolean(state.scope);
  $("scope-chip").hidden = !state.scope;
  $("scope-chip").classList.toggle("inactive", !toggle.checked);
  $("scope-label").textContent = state.scope ? baseName(state.scope) : "";
  $("scope-chip").title = state.scope ?? "";
  $("chat-scope").textContent = effectiveScope() ? `In ${effectiveScope()}` : "All folders";
  $("search-where").textContent = effectiveScope() ? `Searching in ${effectiveScope()}` : "Searching all folders";
}

// ---------------------------------------------------------------------------------------------
// search: the list

let typingTimer;

async function search() {
  clearTimeout(typingTimer);
  const query = $("search-input").value.trim();
  const seq = ++state.searchSeq;
  if (!query) {
    state.query = "";
    state.terms = [];
    state.like = null;
    state.results = [];
    state.selected = -1;
    state.tree = null;
    state.treeQuery = null;
    renderResults();
    renderTree();
    renderUnderstood(null);
    fill($("search-notices"));
    return;
  }
  if (state.tab !== "search") showTab("search");
  state.like = null;
  $("results-pane").classList.add("loading");
  const tree = state.view === "list" ? null : loadTree(query);
  const answer = await attempt(
    () => api("/api/search", { query: { q: query, scope: effectiveScope(), limit: 30, ...filterQuery() } }), "Search failed");
  await tree;
  if (seq !== state.searchSeq) return;
  $("results-pane").classList.remove("loading");
  if (!answer) return;
  state.query = query;
  state.terms = answer.terms ?? [];
  state.results = answer.results;
  state.selected = answer.results.length ? 0 : -1;
  const took = answer.timings_ms?.total ?? Object.values(answer.timings_ms ?? {}).reduce((a, b) => a + b, 0);
  $("results-meta").textContent =
    `${answer.results.length} file${answer.results.length === 1 ? "" : "s"}${took ? ` · ${Math.round(took)} ms` : ""}`;
  renderUnderstood(answer.understood);
  fill($("search-notices"), (answer.notices ?? []).map(noticeLine));
  renderResults();
}

/** The files most like one file (GET /api/similar), in the results list. */
async function moreLikeThis(path) {
  const seq = ++state.searchSeq;
  if (state.tab !== "search") showTab("search");
  if (state.view === "tree") setView("list");
  $("results-pane").classList.add("loading");
  const answer = await attempt(
    () => api("/api/similar", { query: { path, scope: effectiveScope(), limit: 30 } }), "Could not find similar files");
  if (seq !== state.searchSeq) return;
  $("results-pane").classList.remove("loading");
  if (!answer) return;
  state.query = "";
  state.terms = [];
  state.like = path;
  renderUnderstood(null);
  state.results = answer.results;
  state.selected = answer.results.length ? 0 : -1;
  $("results-meta").textContent =
    `${answer.results.length} file${answer.results.length === 1 ? "" : "s"} like ${baseName(path)}`;
  const apart = [];
  if (answer.versions?.length) {
    apart.push(h("div.apart", { "data-testid": "versions" }, h("strong", null, "Versions of this file: "),
      answer.versions.map((version, index) => [index ? ", " : "", h("a.version", {
        href: "#", title: `${version.path} · ${Math.round(version.shared * 100)}% of the wording shared`,
        onclick: (event) => {
          event.preventDefault();
          openPreview(version.path, 0);
        } }, `${version.name}${version.mtime ? ` (${when(version.mtime)})` : ""}`)])));
  }
  if (answer.copies?.length) {
    apart.push(h("div.apart", { "data-testid": "copies", title: answer.copies.join("\n") },
      h("strong", null, "Identical copies: "), answer.copies.map(baseName).join(", ")));
  }
  fill($("search-notices"), [...apart, ...(answer.notices ?? []).map(noticeLine)]);
  renderResults();
}

/** A notice on one line; a click shows all of it, the cross dismisses it. A notice names the control that
 * searches the words as typed as an API caller gives it (notices.AS_TYPED); here it is the switch, by its label. */
function noticeLine(notice) {
  const text = notice.replaceAll("literal=true", `“${$("read-words-name").textContent}” off`);
  const close = h("button.notice-close", { type: "button", "aria-label": "Dismiss", "data-testid": "notice-dismiss" }, "×");
  const line = h("div.notice.folded", { title: text, "data-testid": "notice" }, h("span", null, text), close);
  line.addEventListener("click", () => line.classList.toggle("folded"));
  close.addEventListener("click", (event) => {
    event.stopPropagation();
    line.remove();
  });
  return line;
}

function renderResults() {
  const list = $("results");
  const terms = state.terms;
  fill(list, state.results.map((result, index) =>
    h("li.result", {
      role: "option",
      "data-testid": "result",
      "data-path": result.path,
      "data-index": index,
      "aria-selected": String(index === state.selected),
      onclick: () => {
        select(index);
        openSelected();
      },
    },
    h("div.result-head", null,
      icon("file", "icon result-icon"),
      h("span.result-name", { "data-testid": "result-name" }, result.name),
      result.location_label ? h("span.result-place", { "data-testid": "result-place" }, result.location_label) : null,
      h("span.score", { "data-testid": "score", title: scoreDetail(result) }, percent(result.score)),
      h("button.link.more-like", { type: "button", "data-testid": "more-like", title: "Files most like this one",
        onclick: (event) => {
          event.stopPropagation();
          moreLikeThis(result.path);
        } }, "More like this")),
    h("div.result-path", { title: result.path }, result.path),
    h("p.snippet", { "data-testid": "snippet" }, marked(result.snippet, terms)),
    result.signals && result.signals.cosine === null ? h("div.keywords-only", { "data-testid": "keywords-only",
      title: "This file waits for the semantic phase: it was found and ranked by its words" },
      "found by keywords (no meaning yet)") : null,
    result.duplicates?.length ? h("div.duplicates", { "data-testid": "duplicates", title: result.duplicates.join("\n") },
      `also in ${result.duplicates.length} other place${result.duplicates.length === 1 ? "" : "s"}`) : null)));
  $("results-empty").hidden = state.results.length > 0 || Boolean(state.query || state.like);
  if (state.query && !state.results.length) {
    list.append(h("li.none", null, "No file matches. Try other words, or clear the current folder."));
  } else if (state.like && !state.results.length) {
    list.append(h("li.none", null, "No other file is like this one here. Try clearing the current folder."));
  }
}

function scoreDetail(result) {
  const parts = [`legs: ${(result.legs ?? []).join(" + ") || "–"}`];
  if (result.dense_rank) parts.push(`dense #${result.dense_rank}`);
  if (result.bm25_rank) parts.push(`BM25 #${result.bm25_rank}`);
  if (result.rerank !== null && result.rerank !== undefined) parts.push(`rerank ${result.rerank.toFixed(3)}`);
  if (result.signals) parts.push(`carried by ${result.signals.carried_by}`);
  return parts.join(" · ");
}

function select(index) {
  if (!state.results.length) return;
  state.selected = Math.max(0, Math.min(state.results.length - 1, index));
  for (const row of $("results").children) {
    row.setAttribute("aria-selected", String(Number(row.dataset.index) === state.selected));
  }
  $("results").children[state.selected]?.scrollIntoView({ block: "nearest" });
}

function openSelected() {
  const result = state.results[state.selected];
  if (result) openPreview(result.path, result.chunk_index ?? 0);
}

// ---------------------------------------------------------------------------------------------
// search: the meaning tree

function treeKey(query = state.query) {
  return `${query}\u0000${effectiveScope() ?? ""}\u0000${JSON.stringify(filterQuery())}`;
}

// ---------------------------------------------------------------------------------------------
// search: filters on file type and modification date (applied inside the index, before ranking)

const TYPE_CHIPS = [["pdf", "PDF"], ["docx,odt,rtf,doc", "Documents"], ["xlsx,ods,xls,csv", "Sheets"],
  ["pptx,odp,ppt", "Slides"], ["markdown,text", "Notes"], ["image", "Images"], ["email,msg", "E-mail"], ["code", "Code"]];

function renderTypeChips() {
  fill($("type-chips"), TYPE_CHIPS.map(([types, label]) => h("button.chip.type-chip", {
    type: "button", "data-testid": "type-chip", "data-types": types,
    "aria-pressed": String(state.types.has(types)),
    onclick: () => {
      if (state.types.has(types)) state.types.delete(types); else state.types.add(types);
      renderTypeChips();
      search();
    },
  }, label)));
}

function filterQuery() {
  const query = {};
  if (state.types.size) query.type = [...state.types].join(",");
  if ($("modified-after").value) query.modified_after = $("modified-after").value;
  if ($("modified-before").value) query.modified_before = $("modified-before").value;
  if (!$("read-words").checked) query.literal = true;
  return query;
}

/** The filters the search read from the query's words, as chips; a chip's × puts its words in quotes
 * (taken as written: search words again) and searches anew. */
function renderUnderstood(understood) {
  const box = $("understood");
  box.hidden = !understood;
  if (!understood) return fill(box);
  fill(box, [h("span.muted", null, "Understood: "), understood.said.map((words) => h("span.chip", {
    "data-testid": "understood-chip" }, h("span.chip-label", null, words), h("button.chip-remove", {
      type: "button", "aria-label": `Search “${words}” as words, not as a filter`, title: "Take these words as search words",
      onclick: () => {
        const input = $("search-input");
        input.value = input.value.replace(words, `"${words}"`);
        search();
      } }, "×"))), h("span.muted", null, ` searching “${understood.query}”`)]);
}

async function loadTree(query = state.query) {
  if (!query) return;
  const key = treeKey(query);
  const answer = await attempt(
    () => api("/api/tree", { query: { q: query, scope: effectiveScope(), ...filterQuery() } }), "The meaning tree failed");
  if (!answer || key !== treeKey($("search-input").value.trim())) return;
  state.tree = answer.tree;
  state.treeQuery = key;
  renderTree(answer.notices);
}

function renderTree(notices = []) {
  const container = $("tree");
  if (!state.tree) {
    fill(container, state.query ? h("p.none", null, "Nothing in the tree for this query.") : null);
    return;
  }
  // Several roots hang under an unnamed node: show them side by side instead.
  const tops = state.tree.path ? [state.tree] : state.tree.children;
  fill(container,
    notices.map((text) => h("div.notice", null, text)),
    h("ul.mtree", { role: "tree" }, tops.map((node) => treeNode(node, 0))));
}

function treeNode(node, depth) {
  const children = node.children ?? [];
  const open = depth < 3;
  const item = h("li.tnode", {
    "data-testid": "tree-node",
    "data-path": node.path,
    "data-dir": String(node.is_dir),
    role: "treeitem",
    "aria-expanded": children.length ? String(open) : undefined,
  });
  const caret = h(`button.caret${children.length ? "" : ".invisible"}`, {
    "aria-label": "Expand or collapse",
    onclick: (event) => {
      event.stopPropagation();
      item.setAttribute("aria-expanded", String(item.getAttribute("aria-expanded") !== "true"));
    },
  }, icon("caret"));
  const row = h("div.trow", {
    style: { "--heat": String(node.score ?? 0) },
    title: node.is_dir ? `Search inside ${node.path}` : `Preview ${node.path}`,
    onclick: () => (node.is_dir ? setScope(node.path) : openPreview(node.path, chunkOf(node.path))),
  },
  caret,
  icon(node.is_dir ? "folder" : "file", `icon ${node.is_dir ? "folder-icon" : "file-icon"}`),
  h("span.tname", { "data-testid": "tree-name" }, node.name || node.path),
  h("span.tbar", null, h("span.tfill", { style: { width: percent(node.score) } })),
  h("span.tpct", { "data-testid": "tree-score" }, percent(node.score)));
  item.append(row);
  if (children.length) item.append(h("ul.tchildren", { role: "group" }, children.map((c) => treeNode(c, depth + 1))));
  return item;
}

function chunkOf(path) {
  return state.results.find((r) => r.path === path)?.chunk_index ?? 0;
}

// ---------------------------------------------------------------------------------------------
// preview

/** A character offset as the server counts them (code points) as a JavaScript string index (UTF-16 units). */
function unitIndex(text, offset) {
  if (!/[\uD800-\uDFFF]/.test(text)) return offset;
  let units = 0;
  let points = 0;
  for (const character of text) {
    if (points >= offset) break;
    units += character.length;
    points += 1;
  }
  return units;
}

/** Open the preview at a chunk; with ``mark`` ({start, end}: a cited sentence), that sentence marked and in view. */
async function openPreview(path, chunk = 0, mark = null) {
  const drawer = $("preview");
  drawer.hidden = false;
  drawer.classList.add("loading");
  $("preview-name").textContent = baseName(path);
  $("preview-path").textContent = path;
  const request = { path, chunk, ...(mark ? { mark: `${mark.start},${mark.end}` } : {}) };
  state.preview = { path, chunk, mark: request.mark };
  const answer = await attempt(() => api("/api/preview", { query: request }), "Preview failed");
  if (state.preview?.path !== path || state.preview.chunk !== chunk || state.preview.mark !== request.mark) return;
  drawer.classList.remove("loading");
  if (!answer) {
    fill($("preview-text"), h("p.none", null, "This file cannot be previewed."));
    return;
  }
  $("preview-name").textContent = answer.name;
  const terms = state.terms;
  const text = answer.text ?? "";
  const found = answer.start >= 0 && answer.end > answer.start;
  state.preview.page = answer.location?.page ?? null;
  fill($("preview-meta"),
    answer.location_label ? h("span.result-place", { "data-testid": "preview-place" }, answer.location_label) : null,
    h("span", null, `chunk ${answer.chunk_index}`),
    found ? h("span", null, `characters ${answer.start.toLocaleString()}–${answer.end.toLocaleString()}`)
      : h("span.warn", null, "the chunk was not found in the text"),
    answer.truncated ? h("span.warn", null, "long file: the first 200,000 characters") : null);
  if (!text) {
    fill($("preview-text"), h("p.none", null, "No text was extracted from this file."));
    return;
  }
  const start = unitIndex(text, answer.start);
  const end = unitIndex(text, answer.end);
  const cited = answer.mark ? [unitIndex(text, answer.mark.start), unitIndex(text, answer.mark.end)] : null;
  // the cited sentence, marked, within the piece of text it falls in
  const piece = (from, to) => {
    if (!cited || cited[1] <= from || cited[0] >= to) return [marked(text.slice(from, to), terms)];
    const low = Math.max(from, cited[0]);
    const high = Math.min(to, cited[1]);
    return [marked(text.slice(from, low), terms),
      h("span.cited-sentence", { "data-testid": "preview-cited" }, marked(text.slice(low, high), terms)),
      marked(text.slice(high, to), terms)];
  };
  const box = $("preview-text");
  const sheet = answer.page_mark ? pageSheet(path, answer.page_mark) : null;
  const showCited = () => {
    const sentence = sheet?.querySelector(".pdf-page-mark") ?? box.querySelector(".cited-sentence");
    if (sentence) sentence.scrollIntoView({ block: "center" });
    return Boolean(sentence);
  };
  if (!found) {
    fill(box, sheet, ...piece(0, text.length));
    if (!showCited()) box.scrollTop = 0;
    return;
  }
  const hit = h("span.chunk-hit", { id: "preview-chunk", "data-testid": "preview-chunk" }, ...piece(start, end));
  fill(box, sheet, ...piece(0, start), hit, ...piece(end, text.length));
  if (showCited()) return;
  // A chunk taller than the panel is shown at its first marked word, else whole and centred.
  const tall = hit.getBoundingClientRect().height > box.clientHeight;
  const target = tall ? hit.querySelector("mark") : hit;
  (target ?? hit).scrollIntoView({ block: target ? "center" : "start" });
}

/** A PDF's page as printed, the cited sentence marked on it (``mark``: the page and its boxes, as fractions
 * of the page from its top-left corner), above the text preview. */
function pageSheet(path, mark) {
  const share = (value) => `${(value * 100).toFixed(3)}%`;
  const image = h("img", { alt: `page ${mark.page}`, "data-testid": "preview-page-image" });
  picture("/api/page", { path, page: mark.page }).then((url) => {
    if (state.pageImage) URL.revokeObjectURL(state.pageImage);
    state.pageImage = image.src = url;
  }, () => image.replaceWith(h("p.none", null, "This page cannot be shown.")));
  return h("figure.pdf-page", { "data-testid": "preview-page", "data-page": mark.page },
    h("div.pdf-page-sheet", { style: { aspectRatio: String(mark.aspect) } },
      image,
      ...mark.boxes.map(([left, top, right, bottom]) => h("span.pdf-page-mark", {
        "data-testid": "page-mark",
        style: { left: share(left), top: share(top), width: share(right - left), height: share(bottom - top) },
      }))),
    h("figcaption", null, `p. ${mark.page}: the cited sentence on the page`));
}

function closePreview() {
  $("preview").hidden = true;
  state.preview = null;
  if (state.tab === "search") $("search-input").focus();  // arrows and Enter keep working
}

async function openFile(path, page = null) {
  const answer = await attempt(() => api("/api/open", { method: "POST", body: page ? { path, page } : { path } }),
    "Could not open the file");
  if (answer) toast(`Opened ${baseName(answer.opened)}${answer.page ? ` at page ${answer.page}` : ""}`);
}

// ---------------------------------------------------------------------------------------------
// explorer

async function loadExplorer() {
  state.explorerLoaded = true;
  const tree = $("explorer-tree");
  const answer = await attempt(() => api("/api/browse"), "Could not list the folders");
  if (!answer) {
    state.explorerLoaded = false;
    return;
  }
  if (!answer.entries.length) {
    fill(tree, h("li.none", null, "No folder yet. Add one above."));
    return;
  }
  fill(tree, answer.entries.map(explorerNode));
  for (const root of tree.children) expand(root);
}

function explorerNode(entry) {
  const item = h("li.enode", {
    "data-testid": "explorer-node",
    "data-path": entry.path,
    "data-dir": String(entry.is_dir),
    role: "treeitem",
    "aria-expanded": entry.is_dir ? "false" : undefined,
  });
  item.entry = entry;
  const caret = h(`button.caret${entry.is_dir ? "" : ".invisible"}`, {
    "aria-label": "Expand or collapse",
    onclick: (event) => {
      event.stopPropagation();
      item.getAttribute("aria-expanded") === "true" ? item.setAttribute("aria-expanded", "false") : expand(item);
    },
  }, icon("caret"));
  const kindIcon = entry.kind === "block" ? "block" : entry.is_dir ? "folder" : "file";
  const row = h("div.erow", {
    tabindex: "0",
    "aria-selected": String(entry.path === state.detailPath),
    onclick: () => showDetail(entry.path),
    ondblclick: () => entry.is_dir && (item.getAttribute("aria-expanded") === "true"
      ? item.setAttribute("aria-expanded", "false") : expand(item)),
  },
  caret,
  icon(kindIcon, `icon ${entry.is_dir ? "folder-icon" : "file-icon"}`),
  h("span.ename", { "data-testid": "explorer-name" }, entry.name),
  entry.is_dir && entry.members ? h("span.muted.small", null, `${entry.members} files`) : null,
  statusBadge(entry.status));
  if (entry.error) row.title = entry.error;
  item.append(row);
  return item;
}

async function expand(item, { reload = false } = {}) {
  if (!item.entry.is_dir) return;
  item.setAttribute("aria-expanded", "true");
  if (item.loaded && !reload) return;
  const answer = await attempt(() => api("/api/browse", { query: { path: item.entry.path } }), "Could not list the folder");
  if (!answer) return;
  item.loaded = true;
  item.querySelector(":scope > ul")?.remove();
  const children = h("ul.echildren", { role: "group" }, answer.entries.map(explorerNode));
  if (!answer.entries.length) children.append(h("li.none.small", null, "empty"));
  item.append(children);
}

function explorerItem(path) {
  return [...$("explorer-tree").querySelectorAll("li.enode")].find((li) => li.dataset.path === path);
}

async function refreshExplorerAround(path) {
  const parent = explorerItem(parentOf(path));
  if (parent) await expand(parent, { reload: true });
  else await loadExplorer();
}

async function showDetail(path) {
  state.detailPath = path;
  for (const row of $("explorer-tree").querySelectorAll(".erow")) {
    row.setAttribute("aria-selected", String(row.parentElement.dataset.path === path));
  }
  const detail = $("detail");
  detail.classList.add("loading");
  const file = await attempt(() => api("/api/file", { query: { path } }), "Could not read the file's details");
  if (state.detailPath !== path) return;
  detail.classList.remove("loading");
  if (file) renderDetail(file);
}

function renderDetail(file) {
  const isBlock = file.kind === "block";
  const facts = [
    ["Kind", file.is_dir ? (isBlock ? "folder indexed as one block" : "folder") : "file"],
    ["Extraction", file.doc_type],
    ["Size", file.size === null || file.size === undefined ? null : bytes(file.size)],
    ["Modified", file.mtime ? when(file.mtime) : null],
    ["Chunks", file.chunks_count],
    ["Attempts", file.attempts],
  ].filter(([, value]) => value !== null && value !== undefined && value !== "");
  const sense = file.sense;
  const senseBox = h("textarea.sense-input", {
    id: "sense-input", "data-testid": "sense-input", rows: 5, value: sense?.text ?? "",
    placeholder: "One or two sentences on what this file is about",
  });
  const canHaveSense = !file.is_dir || isBlock;
  const summaryBox = h("section.detail-section", { "data-testid": "detail-summary", hidden: true });
  fill($("detail"),
    h("div.detail-head", null,
      icon(isBlock ? "block" : file.is_dir ? "folder" : "file", "icon detail-icon"),
      h("div.detail-title", null,
        h("h2", { "data-testid": "detail-name" }, file.name),
        h("div.detail-path", { "data-testid": "detail-path" }, file.path)),
      statusBadge(file.status)),
    h("div.detail-actions", null,
      file.is_dir ? h("button.button", { "data-testid": "scope-here", onclick: () => {
        setScope(file.path);
        toast(`Searching in ${baseName(file.path)}`);
      } }, "Search in this folder") : null,
      !file.is_dir ? h("button.button", { onclick: () => openPreview(file.path, 0) }, "Preview") : null,
      !file.is_dir ? h("button.button", { onclick: () => openFile(file.path) }, "Open") : null,
      !file.is_dir && file.chunks_count ? h("button.button", { "data-testid": "detail-more-like",
        onclick: () => moreLikeThis(file.path) }, "More like this") : null,
      h("button.button", { "data-testid": "detail-summarise", title: file.is_dir
        ? "Summarise each file of this folder, then the whole, on the chat model"
        : "Read the whole file part by part and summarise it on the chat model",
      onclick: (event) => summarise(file.path, summaryBox, event.currentTarget) }, "Summarise"),
      h("button.button", { "data-testid": "reindex", onclick: () => reindex(file.path) }, "Re-index"),
      file.is_root ? h("button.button.danger", { "data-testid": "remove-root", onclick: () => removeRoot(file.path) },
        "Stop indexing this folder") : null),
    h("dl.facts", null, facts.map(([label, value]) => [h("dt", null, label), h("dd", null, String(value))])),
    summaryBox,
    file.error ? h("div.error-box", { "data-testid": "detail-error" }, h("strong", null, "Last error"), h("pre", null, file.error)) : null,
    file.is_dir ? folderModeBlock(file) : null,
    canHaveSense ? h("section.detail-section", null,
      h("h3", null, "Sense",
        sense ? h("span.muted.small", null, sense.pinned ? " · pinned by hand" : ` · written by ${sense.source}`) : null),
      senseBox,
      h("div.row-actions", null,
        h("button.button.primary", { "data-testid": "sense-save", onclick: () => saveSense(file.path, senseBox.value) },
          "Save & pin"),
        h("span.muted.small", null, "A pinned sense is never rewritten; the file is re-indexed with it."))) : null,
    file.chunks?.length ? h("section.detail-section", null,
      h("details.chunks", { "data-testid": "chunks" },
        h("summary", null, `Chunks (${file.chunks.length})`),
        file.chunks.map((chunk) => h("details.chunk", { "data-testid": "chunk" },
          h("summary", null, h("span.chunk-n", null, `#${chunk.chunk_index}`), chunk.text.slice(0, 90)),
          h("pre", null, chunk.text))))) : null);
}

/** A whole file (or a small folder) summarised part by part (POST /api/summarise/stream): each step
 * shows as it comes ("part 3 of 12"), then the summary, its marks linking to the pages they cite. */
async function summarise(path, box, button) {
  const steps = h("ol.summary-steps", { "data-testid": "summary-progress" });
  const out = h("div.summary-out", { "data-testid": "summary-out" });
  box.hidden = false;
  fill(box, h("h3", null, "Summary"), steps, out);
  button.disabled = true;
  try {
    for await (const { event, data } of events("/api/summarise/stream", { path })) {
      if (event === "progress") {
        steps.append(h("li.summary-step", { "data-testid": "summary-step" }, data.text));
      } else if (event === "done") {
        renderSummary(out, data);
      } else if (event === "error") {
        out.append(h("div.error-box", { "data-testid": "summary-error" }, data.message));
      }
    }
  } catch (error) {
    out.append(h("div.error-box", { "data-testid": "summary-error" }, error.message));
  } finally {
    button.disabled = false;
  }
}

function renderSummary(element, summary) {
  const notes = new Map(summary.notes.map((note) => [note.n, note]));
  const whole = h("p.summary-text", { "data-testid": "summary-text" });
  summary.summary.split(/(\[\d+\])/).forEach((piece, index) => {
    const note = index % 2 ? notes.get(Number(piece.slice(1, -1))) : null;
    if (note) {
      whole.append(h("button.cite.wide", { "data-testid": "summary-cite", title: `${note.name} ${note.where}\n\n${note.text}`,
        onclick: () => openPreview(note.path, 0) }, note.where));
    } else if (piece && index % 2 === 0) {
      whole.append(piece);
    }
  });
  fill(element, whole,
    h("ol.summary-notes", null, summary.notes.map((note) => h("li", { "data-testid": "summary-note" },
      h("strong", null, `${note.name} · ${note.where}`), h("div.muted.small", null, note.text)))),
    summary.notices.map(noticeLine),
    h("div.muted.small", { "data-testid": "summary-stats" },
      `${summary.parts} part(s) read in ${summary.seconds.toFixed(1)} s on ${summary.model}`));
}

function folderModeBlock(file) {
  const mode = file.folder_mode;
  const choice = (label, value, testid, help) => h("button.button", {
    "data-testid": testid,
    class: `button${mode === value ? " active" : ""}`,
    "aria-pressed": String(mode === value),
    title: help,
    onclick: () => setFolderMode(file.path, value),
  }, label);
  return h("section.detail-section", null,
    h("h3", null, "Folder mode"),
    h("div.row-actions", null,
      choice("Treat as block", "block", "mode-block", "Index the folder as one unit"),
      choice("Index contents", "recursive", "mode-recursive", "Index every file inside"),
      choice("Automatic", null, "mode-auto", "Let SenseTree decide")),
    file.block_reason ? h("p.muted.small", null, file.block_reason) : null);
}

async function reindex(path) {
  const answer = await attempt(() => api("/api/reindex", { method: "POST", body: { path } }), "Re-index failed");
  if (answer) toast(`${answer.requeued} file${answer.requeued === 1 ? "" : "s"} queued for indexing`);
  refreshStatus();
}

async function saveSense(path, sense) {
  const answer = await attempt(() => api("/api/sense", { method: "PUT", body: { path, sense } }), "Could not save the sense");
  if (!answer) return;
  toast("Sense saved and pinned; the file is being re-indexed");
  showDetail(path);
}

async function setFolderMode(path, mode) {
  const answer = await attempt(
    () => api("/api/folder-mode", { method: "POST", body: { path, mode } }), "Could not change the folder mode");
  if (!answer) return;
  toast(mode === "block" ? "Indexed as one block from now on" : mode === "recursive"
    ? "Its files are indexed one by one from now on" : "SenseTree decides for this folder again");
  await refreshExplorerAround(path);
  showDetail(path);
}

async function addRoot(event) {
  event.preventDefault();
  const input = $("add-root-input");
  const path = input.value.trim();
  if (!path) return;
  const answer = await attempt(() => api("/api/roots", { method: "POST", body: { path } }), "Could not add the folder");
  if (!answer) return;
  input.value = "";
  toast(`Added ${answer.root}; indexing starts now`);
  await loadExplorer();
  refreshStatus();
}

async function removeRoot(path) {
  if (!(await confirmDialog({
    title: `Stop indexing ${baseName(path)}?`,
    message: `Its entries leave the index; the files on disk are not touched. You can add ${path} again later.`,
    confirm: "Stop indexing",
  }))) return;
  const answer = await attempt(
    () => api("/api/roots", { method: "DELETE", query: { path } }), "Could not remove the folder");
  if (!answer) return;
  toast(`${baseName(path)} is no longer indexed (${answer.removed} entr${answer.removed === 1 ? "y" : "ies"} removed)`);
  const under = (inner) => inner === path || inner.startsWith(path.replace(/[\\/]+$/, "") + (path.includes("\\") ? "\\" : "/"));
  if (state.scope && under(state.scope)) setScope("");
  state.detailPath = null;
  fill($("detail"), h("div.empty", null, h("p.empty-title", null, "Nothing selected"),
    h("p", null, "Pick a file or a folder to see how it is indexed.")));
  await loadExplorer();
  refreshStatus();
}

// ---------------------------------------------------------------------------------------------
// queue

let queueTimer;
const rendered = {};

/** Re-render a part only when its data changed, so buttons stay put under the pointer. */
function renderIfChanged(name, data, render) {
  const signature = JSON.stringify(data);
  if (rendered[name] === signature) return;
  rendered[name] = signature;
  render(data);
}

async function pollQueue() {
  clearTimeout(queueTimer);
  if (state.tab !== "queue") return;
  const queue = await attempt(() => api("/api/queue", { query: { limit: QUEUE_LIST_LIMIT } }), "Could not read the queue");
  if (queue) renderQueue(queue);
  if (state.tab === "queue") queueTimer = setTimeout(pollQueue, document.hidden ? 5000 : 1000);
}

function renderQueue(queue) {
  renderIfChanged("progress", queue.indexing, renderProgress);
  renderIfChanged("failed", queue.failed, (failed) => {
    $("failed-count").textContent = failed.length ? String(failed.length) : "";
    $("retry-all").disabled = $("ignore-all").disabled = !failed.length;
    fill($("failed-list"), failed.length ? failed.map((item) => h("li.qitem.failed", {
      "data-testid": "failed-item", "data-path": item.path,
    },
    h("div.qmain", null,
      h("div.qname", null, baseName(item.path), h("span.muted.small", null, ` · ${item.attempts} attempt${item.attempts === 1 ? "" : "s"}`)),
      h("div.qpath", null, item.path),
      h("pre.qerror", { "data-testid": "failed-error" }, item.error ?? "unknown error")),
    h("div.actions", null,
      h("button.button", { "data-testid": "retry", onclick: () => retry(item.path) }, "Retry"),
      h("button.button", { "data-testid": "ignore", onclick: () => ignore(item.path) }, "Ignore"))))
      : h("li.none", null, "No failures."));
  });
  renderIfChanged("pending", [queue.pending, queue.pending_count], ([pending, count]) => {
    $("pending-count").textContent = count ? String(count) : "";
    fill($("pending-list"), pending.length ? pending.map((item) => h("li.qitem", {
      "data-testid": "pending-item", "data-path": item.path,
    }, h("span.qname", null, baseName(item.path)), h("span.qpath", null, item.path)))
      : h("li.none", null, "Nothing waiting."));
    if (count > pending.length) $("pending-list").append(h("li.none", null, `and ${count - pending.length} more`));
  });
  renderIfChanged("noted", queue.noted ?? [], (noted) => {
    $("noted-card").hidden = !noted.length;
    $("noted-count").textContent = String(noted.length);
    fill($("noted-list"), noted.map((item) => h("li.qitem", { "data-testid": "noted-item", "data-path": item.path },
      h("span.qname", null, baseName(item.path)), h("span.qpath", null, item.path),
      h("span.muted.small", null, [item.error, item.notes].filter(Boolean).join("; ")))));
  });
  renderIfChanged("ignored", queue.ignored ?? [], (ignored) => {
    $("ignored-card").hidden = !ignored.length;
    $("ignored-count").textContent = String(ignored.length);
    fill($("ignored-list"), ignored.map((path) => h("li.qitem", { "data-testid": "ignored-item", "data-path": path },
      h("span.qname", null, baseName(path)), h("span.qpath", null, path),
      h("button.button.small", { onclick: () => unignore(path) }, "Index again"))));
  });
}

function renderProgress(progress) {
  const files = progress.files ?? 0;
  const keyword = progress.keyword_ready ?? 0;
  const semantic = progress.semantic ?? 0;
  const upToDate = !progress.running && semantic >= files;
  const stateText = progress.paused ? `Paused: ${progress.paused}` : progress.running ? "Indexing" : upToDate ? "Up to date" : "Waiting";
  const stages = progress.stages ?? {};
  const stage = (label, data, unit) => h("div.stage", { "data-testid": `stage-${label.toLowerCase()}` },
    h("div.stage-label", null, label),
    h("div.stage-rate", null, rate(data?.per_s, unit)),
    h("div.muted.small", null, `${data?.[unit === "chunks" ? "chunks" : "files"] ?? 0} ${unit} in ${duration(data?.seconds ?? 0)}`));
  // Keyword first, meaning after: every file is findable by its words long before it has vectors.
  const phase = (label, testid, done, note) => h("div.phase", { "data-testid": testid },
    h("div.phase-head", null, h("span", null, label),
      h("span.muted", { "data-testid": `${testid}-counter` }, `${done.toLocaleString()} / ${files.toLocaleString()} files`),
      note ? h("span.muted.small", null, note) : null),
    h("div.progress", { role: "progressbar", "aria-label": label, "aria-valuemin": 0, "aria-valuemax": files, "aria-valuenow": done },
      h("span.progress-fill", { style: { width: `${files ? Math.round(Math.min(1, done / files) * 100) : 100}%` } })));
  const eta = semantic >= files ? "–" : progress.semantic_eta_s == null ? (progress.running ? "measuring" : "–") : duration(progress.semantic_eta_s);
  fill($("progress-card"),
    h("div.card-head", null, h("h2", null, stateText)),
    phase("Keyword-ready", "phase-keyword", keyword, "findable by exact words and names"),
    phase("Semantic", "phase-semantic", semantic, semantic < files ? `ETA ${eta}` : "findable by meaning"),
    h("div.current", { "data-testid": "current-file" },
      progress.current ? [h("span.muted", null, progress.phase === "semantic" ? "Embedding: " : "Reading: "), progress.current]
        : h("span.muted", null, "No file in progress")),
    h("div.counters", null,
      counter("Failed", progress.failed ?? 0), counter("Chunks left", (progress.chunks_left ?? 0).toLocaleString()),
      counter("Rate", rate(progress.embed_rate, "chunks")), counter("ETA", eta)),
    h("div.stages", null,
      stage("Extraction", stages.extraction, "files"),
      stage("Sense", stages.sense, "files"),
      stage("Embedding", stages.embedding, "chunks")));
}

function counter(label, value) {
  return h("div.counter", null, h("div.counter-value", null, String(value)), h("div.counter-label", null, label));
}

async function retry(path) {
  const answer = await attempt(() => api("/api/retry", { method: "POST", body: path ? { path } : {} }), "Retry failed");
  if (answer) toast(`${answer.requeued} file${answer.requeued === 1 ? "" : "s"} queued again`);
  pollQueue();
}

async function ignore(path) {
  if (!path && !(await confirmDialog({
    title: "Ignore every failed file?",
    message: "Ignored files leave the index and the queue until you index them again.",
    confirm: "Ignore all",
  }))) return;
  const answer = await attempt(() => api("/api/ignore", { method: "POST", body: path ? { path } : {} }), "Ignore failed");
  if (answer) toast(`${answer.ignored} file${answer.ignored === 1 ? "" : "s"} ignored`);
  pollQueue();
}

async function unignore(path) {
  const answer = await attempt(() => api("/api/unignore", { method: "POST", body: { path } }), "Could not index it again");
  if (answer) toast(`${baseName(path)} will be indexed again`);
  pollQueue();
}

// ---------------------------------------------------------------------------------------------
// assistant

function toggleChat(open = $("chat").hidden) {
  $("chat").hidden = !open;
  $("chat-toggle").classList.toggle("active", open);
  $("chat-toggle").setAttribute("aria-pressed", String(open));
  if (open) $("chat-input").focus();
}

function newChat() {
  state.chatAbort?.abort();
  state.conversation = null;
  fill($("chat-log"), h("div.empty.chat-empty", null,
    h("p.empty-title", null, "Ask about your files"),
    h("p", null, "Answers cite the files they come from; click a source to read it.")));
  $("chat-input").focus();
}

async function ask(event) {
  event?.preventDefault();
  if (state.chatAbort) {
    state.chatAbort.abort();
    return;
  }
  const question = $("chat-input").value.trim();
  if (!question) return;
  $("chat-input").value = "";
  const log = $("chat-log");
  log.querySelector(".chat-empty")?.remove();
  log.append(h("div.msg.user", { "data-testid": "chat-question" }, question));
  const steps = h("ul.steps", { "data-testid": "chat-steps" });
  const answer = h("div.answer.streaming", { "data-testid": "chat-answer" });
  const footer = h("div.msg-footer");
  const message = h("div.msg.assistant", { "data-testid": "chat-message" }, steps, answer, footer);
  log.append(message);
  log.scrollTop = log.scrollHeight;

  const controller = new AbortController();
  state.chatAbort = controller;
  $("chat-send").textContent = "Stop";
  const body = { question, scope: effectiveScope(), conversation: state.conversation ?? undefined };
  try {
    for await (const { event: kind, data } of events("/api/chat", body, controller.signal)) {
      if (kind === "start") {
        state.conversation = data.conversation;
        footer.textContent = data.model ?? "";
      } else if (kind === "step") {
        steps.append(h("li.step", { "data-testid": "chat-step", "data-kind": data.kind }, h("span.step-kind", null, data.kind), data.text));
      } else if (kind === "token") {
        answer.append(data.text);
      } else if (kind === "done") {
        renderAnswer(answer, data.answer, data.sources ?? [], data.citations ?? []);
        message.append(sourceChips(data.sources ?? [], data.citations ?? []));
        const stats = data.stats ?? {};
        if (stats.tokens_per_s) footer.textContent += ` · ${stats.tokens} tokens · ${stats.tokens_per_s.toFixed(1)} tok/s`;
      } else if (kind === "error") {
        message.append(h("div.msg-error", { "data-testid": "chat-error", role: "alert" }, data.message ?? String(data)));
      }
      log.scrollTop = log.scrollHeight;
    }
  } catch (error) {
    if (error.name !== "AbortError") {
      message.append(h("div.msg-error", { "data-testid": "chat-error", role: "alert" }, error.message));
    } else {
      message.append(h("div.muted.small", null, "stopped"));
    }
  } finally {
    answer.classList.remove("streaming");
    if (!answer.textContent) answer.remove();
    state.chatAbort = null;
    $("chat-send").textContent = "Send";
    log.scrollTop = log.scrollHeight;
  }
}

/** Open a source in the preview: at the sentence that supports a claim when ``cited`` (a span of
 * ``ask --json``'s citations) places it, else at the source's chunk. */
function openSource(source, cited = null) {
  if (cited?.span) openPreview(source.path, cited.chunk_index ?? source.chunk_index ?? 0, cited.span);
  else openPreview(source.path, source.chunk_index ?? 0);
}

/** The final answer, with its [n] markers turned into links to the sources, each at the sentence that
 * supports the claim it ends. */
function renderAnswer(element, text, sources, citations = []) {
  const byNumber = new Map(sources.map((s) => [s.n, s]));
  const body = text ?? "";
  const claims = citations.filter((c) => c.at).map((c) => ({
    from: unitIndex(body, c.at[0]), to: unitIndex(body, c.at[1]), spans: c.spans ?? [] }));
  fill(element);
  let offset = 0;
  body.split(/(\[\d+(?:\s*,\s*\d+)*\])/).forEach((piece, index) => {
    const at = offset;
    offset += piece.length;
    if (index % 2 === 0) {
      if (piece) element.append(piece);
      return;
    }
    const claim = claims.find((c) => c.from <= at && at < c.to);
    for (const n of piece.match(/\d+/g)) {
      const source = byNumber.get(Number(n));
      const cited = claim?.spans.find((s) => s.n === Number(n)) ?? null;
      element.append(source
        ? h("button.cite", {
          title: cited ? `${source.path}\n\n“${cited.quote}”` : source.path,
          "data-testid": "cite", "data-exact": cited ? String(cited.exact) : null,
          onclick: () => openSource(source, cited),
        }, n)
        : h("sup", null, n));
    }
  });
}

function sourceChips(sources, citations = []) {
  if (!sources.length) return null;
  return h("div.sources", { "data-testid": "chat-sources" },
    sources.map((source) => h("button.chip.source", {
      "data-testid": "source-chip",
      "data-path": source.path,
      class: `chip source${source.cited ? " cited" : ""}`,
      title: `${source.path}${source.snippet ? `\n\n${source.snippet}` : ""}`,
      // at the first sentence of it the answer cites, else at its chunk
      onclick: () => openSource(source, citations.flatMap((c) => c.spans ?? []).find((s) => s.n === source.n)),
    }, h("span.source-n", null, String(source.n)),
      source.location_label ? `${source.name} ${source.location_label}` : source.name)));
}

// ---------------------------------------------------------------------------------------------
// settings

const SECTIONS = ["retrieval", "indexing", "embedding", "sense", "chat"];
const SECTION_HELP = {
  retrieval: "How a query is answered: the legs, and the cross-encoder that reorders the best candidates.",
  indexing: "How files are cut into chunks and described.",
  embedding: "The model that turns text into vectors. Changing it re-indexes everything.",
  sense: "The model that writes a one-line sense for each file.",
  chat: "The assistant's model. Empty = the embedded model.",
};
const MODEL_ROLES = { retrieval: ["reranker", "retrieval.reranker_model"], embedding: ["embedding", "embedding.model"],
  chat: ["chat", "chat.model"] };

async function loadSettings() {
  const answer = await attempt(() => api("/api/settings"), "Could not read the settings");
  if (!answer) return;
  state.settings = answer;
  renderSettings(answer);
}

function renderSettings({ settings, models }) {
  const bySection = new Map();
  for (const setting of settings) {
    const section = setting.key.split(".")[0];
    if (!bySection.has(section)) bySection.set(section, []);
    bySection.get(section).push(setting);
  }
  const order = [...SECTIONS.filter((s) => bySection.has(s)), ...[...bySection.keys()].filter((s) => !SECTIONS.includes(s))];
  fill($("settings"), order.map((section) => h("section.card.settings-section", { "data-testid": `section-${section}`, id: `section-${section}` },
    h("div.card-head", null,
      h("div", null, h("h2", null, section[0].toUpperCase() + section.slice(1)), h("p.muted.small", null, SECTION_HELP[section] ?? "")),
      ["embedding", "sense", "chat"].includes(section) ? endpointTest(section) : null),
    bySection.get(section).map(settingRow),
    MODEL_ROLES[section] && models?.[MODEL_ROLES[section][0]]?.length ? modelTable(...MODEL_ROLES[section], models) : null)));
}

function settingRow(setting) {
  const testid = `setting-${setting.key}`;
  let input;
  if (setting.type === "bool") {
    input = h("input", { type: "checkbox", checked: Boolean(setting.value), "data-testid": testid, id: testid });
  } else if (setting.type === "int" || setting.type === "float") {
    input = h("input.input.number", { type: "number", step: setting.type === "int" ? "1" : "any", value: String(setting.value),
      "data-testid": testid, id: testid });
  } else {
    input = h("input.input", { type: setting.secret ? "password" : "text", value: setting.value ?? "", "data-testid": testid,
      id: testid, spellcheck: "false", autocomplete: "off", placeholder: setting.default === "" ? "(empty)" : String(setting.default) });
  }
  const notice = h("div.setting-notice", { "data-testid": `notice-${setting.key}` });
  const row = h("div.setting", { "data-key": setting.key },
    h("label.setting-label", { for: testid },
      h("code", null, setting.key),
      setting.reindex ? h("span.badge.reindex", { title: "Changing this re-indexes everything" }, "re-indexes everything") : null),
    h("div.setting-help.muted", null, setting.help,
      h("span.setting-default", null, ` · default ${setting.secret ? "empty" : JSON.stringify(setting.default)}`)),
    h("div.setting-control", null,
      setting.type === "bool" ? h("label.toggle", null, input, h("span.switch"), onOff(input)) : input,
      h("button.button", { "data-testid": `save-${setting.key}`, onclick: () => saveSetting(setting, readInput(setting, input), notice) }, "Save")),
    notice);
  return row;
}

/** "on" or "off" beside a checkbox, following it. */
function onOff(checkbox) {
  const label = h("span.small.muted", null, checkbox.checked ? "on" : "off");
  checkbox.addEventListener("change", () => {
    label.textContent = checkbox.checked ? "on" : "off";
  });
  return label;
}

function readInput(setting, input) {
  if (setting.type === "bool") return input.checked;
  if (setting.type === "int") return Number.parseInt(input.value, 10);
  if (setting.type === "float") return Number.parseFloat(input.value);
  return input.value;
}

async function saveSetting(setting, value, notice) {
  if (typeof value === "number" && Number.isNaN(value)) {
    toast(`${setting.key} takes a number`, "error");
    return;
  }
  // a new model, or the same one saved while a change made in settings.toml is held (status.unconfirmed_change)
  const asks = setting.reindex && (value !== setting.value || Boolean(state.unconfirmedChange));
  if (asks && !(await confirmDialog({
    title: `Change ${setting.key}?`,
    message: "Changing this re-indexes everything: the current vectors are deleted and every file is embedded again "
      + "with the new model. Search answers from what is already re-indexed until it finishes.",
    confirm: "Change and re-index",
  }))) {
    toast(`${setting.key} was not changed`);
    return;
  }
  // the dialog above was the confirmation a change that wipes the index needs (PUT refuses it without)
  const body = asks ? { key: setting.key, value, confirm: true } : { key: setting.key, value };
  const answer = await attempt(() => api("/api/settings", { method: "PUT", body }),
    `Could not save ${setting.key}`);
  if (!answer) return;
  setting.value = answer.value;
  if (notice) fill(notice, answer.notice ? h("div.notice", null, answer.notice) : h("span.ok", null, "Saved"));
  toast(answer.notice ?? `${setting.key} saved`);
  refreshStatus();
  if (setting.key.endsWith("model")) loadSettings();
}

function endpointTest(role) {
  const result = h("div.test-result", { "data-testid": `test-result-${role}` });
  const button = h("button.button", {
    "data-testid": `test-${role}`,
    onclick: async () => {
      const body = { role };
      for (const field of ["base_url", "model", "api_key"]) {
        const input = document.getElementById(`setting-${role}.${field}`);
        if (input?.value) body[field] = input.value;
      }
      button.disabled = true;
      fill(result, h("span.muted", null, "testing…"));
      const answer = await attempt(() => api("/api/endpoint-test", { method: "POST", body }), "Endpoint test failed");
      button.disabled = false;
      fill(result, answer ? h(`span.${answer.ok ? "ok" : "bad"}`, null, answer.message) : null);
    },
  }, "Test endpoint");
  return h("div.endpoint-test", null, button, result);
}

function modelTable(role, key, models) {
  const setting = state.settings.settings.find((s) => s.key === key);
  return h("div.models", { "data-testid": `models-${role}` },
    h("h3", null, `${role[0].toUpperCase() + role.slice(1)} models`),
    h("table", null,
      h("thead", null, h("tr", null, h("th", null, "Model"), h("th", null, "Installed"), h("th", null, "Note"), h("th"))),
      h("tbody", null, models[role].map((model) => h("tr", { "data-testid": "model-row", "data-model": model.name },
        h("td", null, h("code", null, model.name), model.active ? h("span.badge.status-indexed", null, "active") : null),
        h("td", null, model.installed ? h("span.ok", null, "yes") : h("span.muted", null, "no")),
        h("td.muted.small", null, model.note ?? ""),
        h("td", null, setting && model.installed && !model.active
          ? h("button.button.small", { onclick: () => saveSetting(setting, model.name, null) }, "Use") : null))))));
}

// ---------------------------------------------------------------------------------------------
// status line

let statusTimer;

async function refreshStatus() {
  clearTimeout(statusTimer);
  const status = await attempt(() => api("/api/status"), "Could not read the status");
  if (status) renderStatus(status);
  const busy = status?.indexing?.running;
  statusTimer = setTimeout(refreshStatus, busy ? 1500 : 5000);
}

function renderStatus(status) {
  const counts = status.counts ?? {};
  const progress = status.indexing ?? {};
  const failed = counts.failed ?? 0;
  $("status-dot").className = `dot ${progress.paused ? "paused" : progress.running ? "busy" : failed ? "failed" : "idle"}`;
  $("status-state").textContent = progress.paused ? `Paused: ${progress.paused}`
    : progress.running ? `Indexing · keyword-ready ${progress.keyword_ready ?? 0}/${progress.files ?? 0} · ${progress.meaning ?? `semantic ${progress.semantic ?? 0}/${progress.files ?? 0}`}${progress.slowed ? ` · ${progress.slowed}` : ""}`
      : status.roots?.length ? (status.phases?.semantic < status.phases?.files ? status.phases.meaning : "Up to date")
      : "No folder yet: add one in the Explorer";
  const parts = [`${counts.indexed ?? 0} indexed`];
  if (counts.keyword) parts.push(`${counts.keyword} keyword-ready`);
  if (counts.pending) parts.push(`${counts.pending} pending`);
  if (failed) parts.push(`${failed} failed`);
  if (counts["block member"]) parts.push(`${counts["block member"]} in blocks`);
  parts.push(`${(status.chunks ?? 0).toLocaleString()} chunks`, bytes(status.index_bytes));
  $("status-counts").textContent = parts.join(" · ");
  $("status-model").textContent = status.embedding_model ?? "";
  // a settings change that would wipe the index, held until confirmed: the index keeps its model meanwhile
  state.unconfirmedChange = status.unconfirmed_change ?? "";
  $("status-held").hidden = !status.unconfirmed_change;
  $("status-held").title = status.unconfirmed_change ?? "";
  const notices = status.notices ?? [];
  $("status-notices").hidden = !notices.length;
  $("status-notices").textContent = `${notices.length} notice${notices.length === 1 ? "" : "s"}`;
  $("status-notices").title = notices.join("\n\n");
  $("queue-badge").hidden = !failed;
  $("queue-badge").textContent = String(failed);
}

// ---------------------------------------------------------------------------------------------
// keyboard

function onKey(event) {
  const typing = isTyping(event.target);
  const inSearch = event.target === $("search-input");
  if (event.key === "/" && !typing) {
    event.preventDefault();
    $("search-input").focus();
    $("search-input").select();
    return;
  }
  if (event.key === "Escape" && !$("preview").hidden && !$("confirm-dialog").open) {
    closePreview();
    return;
  }
  if (state.tab !== "search" || (typing && !inSearch) || !state.results.length) return;
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    select(state.selected + (event.key === "ArrowDown" ? 1 : -1));
  } else if (event.key === "Enter" && state.selected >= 0
    && (event.target === document.body || event.target.closest?.("#results"))) {
    event.preventDefault();
    openSelected();
  }
}

function onSearchSubmit(event) {
  event.preventDefault();
  const query = $("search-input").value.trim();
  if (query && query === state.query && state.selected >= 0 && state.tab === "search") openSelected();
  else search();
}

// ---------------------------------------------------------------------------------------------
// start

function start() {
  for (const slot of document.querySelectorAll("[data-icon]")) slot.replaceChildren(icon(slot.dataset.icon));
  whenUnauthorized(() => {
    $("auth-error").hidden = false;
  });
  if (!hasToken()) {
    $("auth-error").hidden = false;
    return;
  }
  for (const button of document.querySelectorAll(".nav-item[data-tab]")) {
    button.addEventListener("click", () => showTab(button.dataset.tab));
  }
  for (const button of $("view-switch").querySelectorAll("button")) {
    button.addEventListener("click", () => setView(button.dataset.view));
  }
  $("search-form").addEventListener("submit", onSearchSubmit);
  renderTypeChips();
  for (const id of ["modified-after", "modified-before", "read-words"]) {
    $(id).addEventListener("change", () => { if (state.query) search(); });
  }
  $("search-input").addEventListener("input", () => {
    clearTimeout(typingTimer);
    typingTimer = setTimeout(search, 400);
  });
  $("scope-toggle").addEventListener("change", (event) => {
    state.scopeOn = event.target.checked;
    renderScope();
    if (state.query) search();
  });
  $("scope-clear").addEventListener("click", () => setScope(null));
  $("preview-close").addEventListener("click", closePreview);
  $("preview-open").addEventListener("click", () => state.preview && openFile(state.preview.path, state.preview.page));
  $("add-root-form").addEventListener("submit", addRoot);
  $("retry-all").addEventListener("click", () => retry());
  $("ignore-all").addEventListener("click", () => ignore());
  $("chat-toggle").addEventListener("click", () => toggleChat());
  $("chat-close").addEventListener("click", () => toggleChat(false));
  $("chat-new").addEventListener("click", newChat);
  $("chat-form").addEventListener("submit", ask);
  $("chat-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) ask(event);
  });
  document.addEventListener("keydown", onKey);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && state.tab === "queue") pollQueue();
  });
  renderScope();
  refreshStatus();
  $("search-input").focus();
}

start();
