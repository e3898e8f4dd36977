// The gateway's fidelity, seen as a user sees it: the official TypeScript
// client calls @modelcontextprotocol/server-everything directly and through
// mcp-runtime, and every answer must be the same (DESIGN.md, "Gateway
// fidelity"). Usage: node probe.mjs DIRECT_URL GATEWAY_URL PREFIX
// Exits 1 when an answer differs.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [direct, gateway, prefix] = process.argv.slice(2);

async function connect(url) {
  const c = new Client({ name: "fidelity-probe", version: "1.0.0" },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } });
  c.setRequestHandler(CreateMessageRequestSchema, async (req) => ({
    model: "probe-model", role: "assistant",
    content: { type: "text", text: "sampled: " + JSON.stringify(req.params.messages[0].content) } }));
  c.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada", email: "ada@example.com", age: 36 } }));
  c.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///work", name: "work" }] }));
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  return c;
}

// canonical orders object members: JSON objects are unordered, and the
// gateway reads tool schemas through a decoder that does not keep order.
function canonical(v) {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map(k => [k, canonical(v[k])]));
  return v;
}

// ours drops the gateway's own metadata (io.mcp-runtime/call), which it
// adds to a result's _meta by design.
function ours(r) {
  const x = structuredClone(r);
  if (x && x._meta) {
    delete x._meta["io.mcp-runtime/call"];
    if (Object.keys(x._meta).length === 0) delete x._meta;
  }
  return x;
}

// tool is a tool definition as the gateway is meant to list it: with the
// State Sync hint it adds to descriptions for the model (DESIGN.md, "State
// Sync"), and without `execution`, since the gateway runs no tasks (a
// tool's taskSupport defaults to "forbidden").
function tool(t) {
  const x = structuredClone(t);
  delete x.execution;
  x.description = (x.description || "").replace(/ \[Cache-Control: [^\]]*\]$/, "");
  return x;
}

// prompt drops `required: false` on arguments, the schema's default, which
// the go-sdk the gateway reads prompts with does not keep.
function prompt(p) {
  const x = structuredClone(p);
  for (const a of x.arguments || []) if (a.required === false) delete a.required;
  return x;
}
const byName = (a, b) => a.name.localeCompare(b.name);

// Each line is printed as soon as it is known, so that a run stopped by
// the script's timeout shows how far it got.
let failed = 0;
const report = line => console.log(line);
function same(what, a, b) {
  const ja = JSON.stringify(canonical(a)), jb = JSON.stringify(canonical(b));
  if (ja === jb) { report(`same  ${what}`); return; }
  failed++;
  report(`DIFF  ${what}\n  direct:  ${ja.slice(0, 600)}\n  gateway: ${jb.slice(0, 600)}`);
}
async function attempt(f) { try { return await f(); } catch (e) { return { thrown: String(e) }; } }
// A call that hangs fails on its own after this long (the client's
// default is 60 s, and eleven of them would outlast the script's limit).
const timeout = 20_000;

const d = await connect(direct);
const g = await connect(gateway);
// The gateway discovers its upstream in the background: wait for its tools.
let gt = [];
for (let i = 0; i < 300 && !gt.some(t => t.name.startsWith(prefix)); i++) {
  gt = (await g.listTools()).tools;
  if (!gt.some(t => t.name.startsWith(prefix))) await new Promise(r => setTimeout(r, 100));
}
const dt = (await d.listTools()).tools;
same("tools/list: the upstream's tools", dt.map(t => tool({ ...t, name: prefix + t.name })).sort(byName),
  gt.filter(t => t.name.startsWith(prefix)).map(tool).sort(byName));

const big = Buffer.alloc(20000, "abcdefghij").toString("base64");
const calls = [
  ["echo", { message: "hi" }],
  ["get-sum", { a: 1, b: 2 }],
  ["get-tiny-image", {}],
  ["get-annotated-message", { messageType: "error", includeImage: true }],
  ["get-resource-links", { count: 3 }],
  ["get-resource-reference", { resourceType: "Blob", resourceId: 2 }],
  ["get-structured-content", { location: "New York" }],
  ["gzip-file-as-resource", { name: "x.gz", data: "data:text/plain;base64," + big, outputType: "resource" }],
  ["trigger-sampling-request", { prompt: "hello", maxTokens: 10 }],
  ["trigger-elicitation-request", {}],
  // Not get-roots-list: server-everything asks for roots once per session,
  // and the gateway's session upstream is shared by all its clients, so it
  // answers with none; roots asked for during a call are relayed (the
  // sampling and elicitation calls above show the relay).
];
// A call that fails the same way on both sides would compare equal and
// prove nothing: the direct call must succeed.
function succeeded(what, r) {
  if (r && (r.thrown || r.isError)) {
    failed++;
    report(`DIFF  ${what} failed when called directly, so comparing proves nothing: ${JSON.stringify(r).slice(0, 300)}`);
  }
  return r;
}
for (const [name, args] of calls) {
  same(`tools/call ${name}`, ours(succeeded(`tools/call ${name}`, await attempt(() => d.callTool({ name, arguments: args }, undefined, { timeout })))),
    ours(await attempt(() => g.callTool({ name: prefix + name, arguments: args }, undefined, { timeout }))));
}
const progress = async (c, name) => {
  const seen = [];
  await c.callTool({ name, arguments: { duration: 1, steps: 3 } }, undefined, { timeout, onprogress: p => seen.push([p.progress, p.total]) });
  return seen;
};
const directProgress = await progress(d, "trigger-long-running-operation");
if (directProgress.length === 0) { failed++; report("DIFF  the upstream sent no progress: the comparison below proves nothing"); }
same("progress of trigger-long-running-operation", directProgress, await progress(g, prefix + "trigger-long-running-operation"));

const dp = (await d.listPrompts()).prompts;
const gp = (await g.listPrompts()).prompts.filter(p => p.name.startsWith(prefix));
same("prompts/list: the upstream's prompts", dp.map(p => prompt({ ...p, name: prefix + p.name })).sort(byName), gp.map(prompt).sort(byName));
for (const p of dp.filter(p => !(p.arguments || []).some(a => a.required))) {
  same(`prompts/get ${p.name}`, succeeded(`prompts/get ${p.name}`, await attempt(() => d.getPrompt({ name: p.name }))), await attempt(() => g.getPrompt({ name: prefix + p.name })));
}
const dr = (await d.listResources()).resources;
const gr = [];
let cursor;
do {
  const page = await g.listResources(cursor ? { cursor } : undefined);
  gr.push(...page.resources);
  cursor = page.nextCursor;
} while (cursor);
same("resources/list: the upstream's first page, all offered", dr.filter(r => !gr.some(x => x.uri === r.uri)).map(r => r.uri), []);
for (const r of dr.slice(0, 4)) {
  same(`resources/read ${r.uri}`, succeeded(`resources/read ${r.uri}`, await attempt(() => d.readResource({ uri: r.uri }))), await attempt(() => g.readResource({ uri: r.uri })));
}
const dtm = (await d.listResourceTemplates()).resourceTemplates;
const gtm = (await g.listResourceTemplates()).resourceTemplates;
same("resources/templates/list: the upstream's, all offered", dtm.filter(t => !gtm.some(x => x.uriTemplate === t.uriTemplate)).map(t => t.uriTemplate), []);

report(failed ? `${failed} answers differ` : "every answer the same");
await d.close();
await g.close();
process.exit(failed ? 1 : 0);
