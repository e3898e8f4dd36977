// cmd/api as a client of the 2026-07-28 era sees it: the official
// TypeScript client (@modelcontextprotocol/client) pinned to 2026-07-28
// lists and calls tools, reads a resource and keeps what it read for as
// long as the server's cache hints say (server/utilities/caching); in
// 'auto' mode it ends in the modern era; in the default ('legacy') mode
// it still initializes a client session; a list-changed handler opens a
// subscriptions/listen that hears of an entry another client creates.
// Usage: node probe.mjs URL
// Exits 1 on the first expectation that fails.
import { Client, StreamableHTTPClientTransport, InMemoryResponseCacheStore } from "@modelcontextprotocol/client";

const [url] = process.argv.slice(2);
let failures = 0;
function expect(ok, what, got) {
  if (ok) {
    console.log(`ok    ${what}`);
  } else {
    failures++;
    console.log(`FAIL  ${what}: got ${JSON.stringify(got)}`);
  }
}

// recordingStore is the client's response cache, recording what the
// client decided to keep, for how long and for whom.
class RecordingStore extends InMemoryResponseCacheStore {
  constructor() { super(); this.writes = []; }
  set(key, entry) {
    this.writes.push({ method: key.method, params: key.params ?? "", ttl: entry.expiresAt === undefined ? undefined : entry.expiresAt - Date.now(), scope: entry.scope });
    return super.set(key, entry);
  }
  last(method, params = "") { return this.writes.filter(w => w.method === method && w.params === params).at(-1); }
}

// fetchCounting records the requests the client sends (JSON-RPC method,
// whether a session id went with it) and the last JSON result of each
// method, as the server sent it.
const sent = [];
const results = {};
const fetchCounting = async (input, init) => {
  let method;
  if (init?.body && typeof init.body === "string") {
    try {
      const msg = JSON.parse(init.body);
      method = msg.method;
      sent.push({ method, session: new Headers(init.headers).get("mcp-session-id") });
    } catch { /* not JSON-RPC */ }
  }
  const res = await fetch(input, init);
  if (method && (res.headers.get("content-type") ?? "").startsWith("application/json")) {
    try { results[method] = (await res.clone().json()).result; } catch { /* no body */ }
  }
  return res;
};

async function connect(mode, store) {
  const c = new Client({ name: "tsclient-probe", version: "1.0.0" },
    { versionNegotiation: { mode }, responseCacheStore: store });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchCounting }));
  return c;
}

// envelope is a tool's answer (INV-MCP-RESP-001), as structuredContent
// carries it; the text blocks may begin with State Sync's invalidation
// block.
function envelope(result) {
  return result.structuredContent ?? {};
}

// Pinned: modern or nothing.
{
  const store = new RecordingStore();
  const c = await connect({ pin: "2026-07-28" }, store);
  expect(c.getNegotiatedProtocolVersion() === "2026-07-28", "pin: negotiated 2026-07-28", c.getNegotiatedProtocolVersion());
  expect(c.getServerVersion()?.name === "mcp-runtime", "pin: serverInfo from server/discover", c.getServerVersion());
  const discover = c.getDiscoverResult();
  expect(discover?.supportedVersions?.includes("2026-07-28"), "pin: discover lists 2026-07-28", discover?.supportedVersions);

  const tools = await c.listTools();
  const names = tools.tools.map(t => t.name);
  expect(names.includes("memory_store") && names.includes("memory_retrieve"), "pin: tools/list has the memory tools", names);
  const listHint = store.last("tools/list");
  expect(results["tools/list"]?.cacheScope === "public" && results["tools/list"]?.ttlMs > 0, "pin: tools/list says public, ttlMs > 0",
    results["tools/list"] && { ttlMs: results["tools/list"].ttlMs, cacheScope: results["tools/list"].cacheScope });
  expect(listHint?.scope === "public" && listHint.ttl > 0, "pin: the client keeps tools/list, publicly, for a while", listHint);

  const stored = await c.callTool({ name: "memory_store", arguments: { namespace: "tsclient", key: "plan", value: { step: 1 } } });
  expect(!stored.isError && envelope(stored).success === true, "pin: memory_store", stored);
  const got = await c.callTool({ name: "memory_retrieve", arguments: { namespace: "tsclient", key: "plan" } });
  expect(!got.isError && envelope(got).data?.value?.step === 1, "pin: memory_retrieve reads it back", got);

  const read = await c.readResource({ uri: "memory://tsclient/plan" });
  expect(read.contents?.[0]?.uri === "memory://tsclient/plan", "pin: resources/read memory://tsclient/plan", read);
  // The memory domain is invalidated by its own mutations: a read is
  // stale at once, and a tenant's data is private.
  const hint = results["resources/read"];
  expect(hint?.ttlMs === 0 && hint?.cacheScope === "private" && hint?.resultType === "complete",
    "pin: resources/read of a memory entry says ttlMs 0, private", hint && { ttlMs: hint.ttlMs, cacheScope: hint.cacheScope });
  expect(store.last("resources/read", "memory://tsclient/plan") === undefined, "pin: the client keeps no copy of it", store.writes);

  // A second read is not served from the cache: the client asks again.
  const before = sent.filter(s => s.method === "resources/read").length;
  await c.readResource({ uri: "memory://tsclient/plan" });
  expect(sent.filter(s => s.method === "resources/read").length === before + 1, "pin: a memory entry is read again, not cached", sent.length);
  // The tool list is: within its TTL the client does not ask again.
  const lists = sent.filter(s => s.method === "tools/list").length;
  await c.listTools();
  expect(sent.filter(s => s.method === "tools/list").length === lists, "pin: tools/list served from the cache within ttlMs", lists);

  expect(sent.every(s => !s.session), "pin: no request carries a session id", sent.filter(s => s.session));
  await c.close();
}

// Listen: a client with a handler for resource-list changes opens a
// subscriptions/listen at connect, and hears of an entry another client
// creates.
{
  let changed = 0;
  let heard;
  const heardIt = new Promise(resolve => { heard = resolve; });
  const listener = new Client({ name: "tsclient-listener", version: "1.0.0" }, {
    versionNegotiation: { mode: { pin: "2026-07-28" } },
    listChanged: { resources: { autoRefresh: false, debounceMs: 0, onChanged: () => { changed++; heard(); } } },
  });
  await listener.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchCounting }));
  const listens = sent.filter(s => s.method === "subscriptions/listen").length;
  expect(listens >= 1, "listen: a list-changed handler opens subscriptions/listen", listens);
  const writer = await connect({ pin: "2026-07-28" }, new RecordingStore());
  const key = "listed-" + Date.now();
  const stored = await writer.callTool({ name: "memory_store", arguments: { namespace: "tsclient", key, value: 1 } });
  expect(!stored.isError, "listen: another client creates an entry", stored);
  const timeout = new Promise(resolve => setTimeout(resolve, 5000, "timeout"));
  const outcome = await Promise.race([heardIt.then(() => "heard"), timeout]);
  expect(outcome === "heard" && changed >= 1, "listen: the listener hears notifications/resources/list_changed", { outcome, changed });
  await writer.close();
  await listener.close();
}

// Auto: the probe finds the modern era.
{
  const c = await connect("auto", new RecordingStore());
  expect(c.getNegotiatedProtocolVersion() === "2026-07-28", "auto: ends in 2026-07-28", c.getNegotiatedProtocolVersion());
  const r = await c.callTool({ name: "runtime_echo", arguments: { text: "auto" } });
  expect(!r.isError && envelope(r).data?.text === "auto", "auto: runtime_echo", r);
  await c.close();
}

// Legacy (the default): a client session, as before.
{
  sent.length = 0;
  const c = await connect("legacy", new RecordingStore());
  expect(c.getNegotiatedProtocolVersion() === "2025-11-25", "legacy: negotiated 2025-11-25", c.getNegotiatedProtocolVersion());
  const r = await c.callTool({ name: "runtime_echo", arguments: { text: "legacy" } });
  expect(!r.isError && envelope(r).data?.text === "legacy", "legacy: runtime_echo", r);
  expect(sent.some(s => s.method === "tools/call" && s.session), "legacy: calls carry the session id", sent);
  await c.close();
}

if (failures > 0) {
  console.log(`${failures} expectation(s) failed`);
  process.exit(1);
}
console.log("the TypeScript client of 2026-07-28 works with cmd/api in both eras");
