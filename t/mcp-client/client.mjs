// The official MCP TypeScript SDK's client against supervise-helper
// (t/supervise_sdk.t): connect over Streamable HTTP, list the tools, call
// each one, print one JSON object per step on stdout.
//
//   node client.mjs URL BOTTLE|token=TOKEN
//
// BOTTLE goes in X-Bottle-Id, as nginx's `bottle_attribute mcp` would set
// it; token=TOKEN sends `Authorization: Bearer TOKEN` instead, as an agent
// does to nginx; with "-" neither is sent.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from
    "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, bottle] = process.argv.slice(2);
const headers = !bottle || bottle === "-" ? {}
    : bottle.startsWith("token=")
    ? { "Authorization": "Bearer " + bottle.slice(6) }
    : { "X-Bottle-Id": bottle };

function out(step, o) {
    console.log(JSON.stringify({ step, ...o }));
}

const transport = new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers } });
const client = new Client({ name: "bottle-sdk-test", version: "1.0.0" });

try {
    await client.connect(transport);
} catch (e) {
    out("connect", { error: String(e && e.message || e) });
    process.exit(0);
}

out("connect", { server: client.getServerVersion(),
                 instructions: client.getInstructions(),
                 session: transport.sessionId,
                 protocol: transport.protocolVersion });

const tools = await client.listTools();
out("list", { tools: tools.tools.map((t) => t.name),
              schemas: tools.tools.every((t) => t.inputSchema &&
                                         t.inputSchema.type === "object") });

const calls = [
    ["list-egress-routes", {}],
    ["egress-allow", { host: "sdk.example.org", methods: ["GET"],
                       justification: "the SDK test" }],
    ["egress-block", { host: "api.github.com", justification: "sdk" }],
    ["forge-connect", { url: "https://localhost:9/",
                        justification: "sdk" }],
    ["add-repo", { repo: "git.example.org/sdk/app", justification: "sdk" }],
    ["launch-bottle", { agent: "claude", prompt: "p", label: "sdk",
                        justification: "sdk" }],
    ["create-repo", { repo: "git.example.org/sdk/new", public: false,
                      justification: "sdk" }],
    ["forge-connect", { url: "http://plain.example/", justification: "x" }],
];

let last = null;

for (const [name, args] of calls) {
    const r = await client.callTool({ name, arguments: args });
    const text = r.content && r.content[0] ? r.content[0].text : "";
    let answer = null;
    try { answer = JSON.parse(text); } catch (e) { /* a refusal's text */ }
    if (answer && answer.id) {
        last = answer.id;
    }
    out("call", { name, isError: !!r.isError, text, answer });
}

const r = await client.callTool({ name: "check-proposal",
                                  arguments: { id: last } });
out("call", { name: "check-proposal", isError: !!r.isError,
              answer: JSON.parse(r.content[0].text) });

try {
    await client.callTool({ name: "no-such-tool", arguments: {} });
    out("unknown", { error: null });
} catch (e) {
    out("unknown", { error: String(e.code) });
}

await client.ping();
out("ping", { ok: true });

await transport.terminateSession();
await client.close();
out("done", {});
