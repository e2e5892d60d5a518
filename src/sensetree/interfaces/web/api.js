// The HTTP API of `sensetree serve`: the token, JSON requests and the chat's server-sent events.

const TOKEN_KEY = "sensetree.token";

// The token arrives once in the address (#token=...), is kept for this tab only and leaves the URL,
// so it is neither bookmarked nor shown over someone's shoulder.
function takeToken() {
  const match = location.hash.match(/(?:^#|&)token=([^&]+)/);
  if (match) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

const token = takeToken();
let onUnauthorized = () => {};

export function hasToken() {
  return Boolean(token);
}

/** Called on every 401: the page shows how to get a valid link. */
export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(json) {
  const result = { Authorization: `Bearer ${token ?? ""}` };
  if (json) result["Content-Type"] = "application/json";
  return result;
}

/** FastAPI says what went wrong in `detail`: a string, or a list of validation errors. */
function describe(payload, fallback) {
  const detail = payload?.detail;
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail)) return detail.map((d) => d.msg ?? JSON.stringify(d)).join("; ");
  return fallback;
}

async function failure(response) {
  if (response.status === 401) onUnauthorized();
  const payload = await response.json().catch(() => null);
  return new ApiError(response.status, describe(payload, `${response.status} ${response.statusText}`));
}

/** A JSON request to /api/...; empty query values are left out. Throws ApiError with the server's detail. */
export async function api(path, { method = "GET", query, body, signal } = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, String(value));
  }
  const response = await fetch(url, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** A picture from /api/... (which wants the token, so an <img> cannot fetch it itself), as an object URL. */
export async function picture(path, query) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, String(value));
  const response = await fetch(url, { headers: headers(false) });
  if (!response.ok) throw await failure(response);
  return URL.createObjectURL(await response.blob());
}

/**
 * POST a JSON body and yield the server-sent events of the answer as {event, data}.
 * EventSource cannot send the Authorization header, so the stream is read and parsed here.
 */
export async function* events(path, body, signal) {
  const response = await fetch(path, {
    method: "POST",
    headers: { ...headers(true), Accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let raw = "";
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    raw += value;
    // Lines may end in \r\n (sse-starlette does); a lone \r at the end may be half of one.
    const cut = raw.endsWith("\r") ? raw.length - 1 : raw.length;
    buffer += raw.slice(0, cut).replace(/\r\n?/g, "\n");
    raw = raw.slice(cut);
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event) yield event;
    }
  }
  const last = parseEvent((buffer + raw).replace(/\r\n?/g, "\n"));
  if (last) yield last;
}

function parseEvent(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  const text = data.join("\n");
  try {
    return { event, data: JSON.parse(text) };
  } catch {
    return { event, data: text };
  }
}
