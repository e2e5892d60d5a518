// Small DOM and formatting helpers. Text always goes in as text nodes, never as HTML.

/** h("div.card", {title: "x", onclick}, child, "text", [more]) -> an element. */
export function h(tag, attrs, ...children) {
  const [name, ...classes] = tag.split(".");
  const element = document.createElement(name || "div");
  if (classes.length) element.className = classes.join(" ");
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) element.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (key === "style" && typeof value === "object") Object.assign(element.style, value);
    else if (key === "value" || (key in element && typeof value !== "string")) element[key] = value;
    else element.setAttribute(key, value === true ? "" : value);
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : String(child));
  }
}

/** Replace an element's children. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}


function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Text with the query's words wrapped in <mark>, case-insensitively, as DOM nodes
 * (so the file's own text can never become markup).
 */
export function marked(text, terms) {
  const fragment = document.createDocumentFragment();
  if (!text) return fragment;
  if (!terms.length) {
    fragment.append(text);
    return fragment;
  }
  // A word matches at its start: "tender" marks "tenders", not "contender".
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(${terms.map(escapeRegExp).join("|")})`, "giu");
  text.split(pattern).forEach((piece, index) => {
    if (!piece) return;
    fragment.append(index % 2 ? h("mark", null, piece) : piece);
  });
  return fragment;
}

export function percent(score) {
  return `${Math.round(Math.max(0, Math.min(1, score ?? 0)) * 100)}%`;
}

export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit && value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function rate(perSecond, unit) {
  if (!perSecond) return `– ${unit}/s`;
  return `${perSecond >= 10 ? Math.round(perSecond).toLocaleString() : perSecond.toFixed(1)} ${unit}/s`;
}

export function when(epochSeconds) {
  if (!epochSeconds) return "–";
  return new Date(epochSeconds * 1000).toLocaleString();
}

/** The last component of a path, Windows or POSIX. */
export function baseName(path) {
  const parts = (path ?? "").split(/[\\/]+/).filter(Boolean);
  return parts.length ? parts[parts.length - 1] : path;
}

/** The folder that holds a path. */
export function parentOf(path) {
  const cut = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  return cut > 0 ? path.slice(0, cut) : path;
}

/** Is the keyboard busy writing text somewhere (so single-key shortcuts must not fire)? */
export function isTyping(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable || target.tagName === "TEXTAREA" || target.tagName === "SELECT") return true;
  if (target.tagName !== "INPUT") return false;
  return !["checkbox", "radio", "button", "submit", "reset", "range", "color"].includes(target.type);
}

const ICONS = {
  folder: "M3 6.5A1.5 1.5 0 0 1 4.5 5h4l2 2h9A1.5 1.5 0 0 1 21 8.5v9a1.5 1.5 0 0 1-1.5 1.5h-15A1.5 1.5 0 0 1 3 17.5z",
  file: "M6 3h8l5 5v12a1 1 0 0 1-1 1H6a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1zm8 0v5h5",
  block: "M4 7l8-4 8 4v10l-8 4-8-4zm0 0l8 4 8-4m-8 4v10",
  search: "M10.5 4a6.5 6.5 0 1 1 0 13 6.5 6.5 0 0 1 0-13zm4.7 11.2L20 20",
  explorer: "M3 5h7l2 2h9v12H3zM7 12h10M7 15.5h6",
  queue: "M4 6h16M4 12h10M4 18h7m8-4l3 3-3 3",
  settings: "M12 8.5a3.5 3.5 0 1 1 0 7 3.5 3.5 0 0 1 0-7zM12 2v3m0 14v3M2 12h3m14 0h3M4.9 4.9l2.1 2.1m10 10 2.1 2.1M4.9 19.1 7 17m10-10 2.1-2.1",
  chat: "M4 5h16v11H9l-5 4z",
  close: "M6 6l12 12M18 6 6 18",
  open: "M14 4h6v6m0-6-9 9M18 14v5a1 1 0 0 1-1 1H5a1 1 0 0 1-1-1V7a1 1 0 0 1 1-1h5",
  caret: "M9 6l6 6-6 6",
};

/** A stroked 24x24 icon. */
export function icon(name, className = "icon") {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", className);
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", ICONS[name]);
  svg.append(path);
  return svg;
}
