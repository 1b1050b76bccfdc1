// The official MCP TypeScript SDK's client through the gateway, for
// t/mcp_gate.t: every request goes through a CONNECT tunnel of the
// gateway's front (the bottle's token as the proxy password), TLS with
// the gateway's CA trusted.  One JSON object per step on stdout.
//
//   node gate_client.mjs URL PROXY_HOST:PORT TOKEN CA_FILE

import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import tls from "node:tls";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from
    "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, proxy, token, caFile] = process.argv.slice(2);
const ca = fs.readFileSync(caFile);

function tunnel(host, port) {
    return new Promise((resolve, reject) => {
        const [ph, pp] = proxy.split(":");
        const s = net.connect(+pp, ph, () => {
            s.write("CONNECT " + host + ":" + port + " HTTP/1.1\r\nHost: "
                    + host + ":" + port + "\r\nProxy-Authorization: Basic "
                    + Buffer.from("agent:" + token).toString("base64")
                    + "\r\n\r\n");
        });
        let buf = "";
        const onData = (d) => {
            buf += d.toString("latin1");
            if (buf.indexOf("\r\n\r\n") < 0) {
                return;
            }
            s.removeListener("data", onData);
            if (!/^HTTP\/1\.[01] 200/.test(buf)) {
                s.destroy();
                reject(new Error("CONNECT: " + buf.split("\r\n")[0]));
                return;
            }
            const t = tls.connect({ socket: s, servername: host, ca,
                                    ALPNProtocols: ["http/1.1"] },
                                  () => resolve(t));
            t.on("error", reject);
        };
        s.on("data", onData);
        s.on("error", reject);
    });
}

async function tunnelFetch(input, init = {}) {
    const u = new URL(typeof input === "string" ? input
                      : input.href ?? input.url);
    const sock = await tunnel(u.hostname, u.port || 443);
    const headers = {};
    new Headers(init.headers || {}).forEach((v, k) => { headers[k] = v; });
    const body = init.body == null ? null
        : typeof init.body === "string" ? init.body
        : Buffer.from(await new Response(init.body).arrayBuffer());

    return new Promise((resolve, reject) => {
        const req = http.request({
            method: init.method || "GET", path: u.pathname + u.search,
            headers: { host: u.host, ...headers },
            createConnection: () => sock }, (res) => {
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers)) {
                for (const x of Array.isArray(v) ? v : [v]) {
                    h.append(k, x);
                }
            }
            const none = [204, 205, 304].includes(res.statusCode);
            resolve(new Response(none ? null : Readable.toWeb(res),
                                 { status: res.statusCode, headers: h }));
        });
        req.on("error", reject);
        if (init.signal) {
            init.signal.addEventListener("abort",
                () => req.destroy(new Error("aborted")), { once: true });
        }
        req.end(body ?? undefined);
    });
}

function out(step, o) {
    console.log(JSON.stringify({ step, ...o }));
}

async function step(name, fn) {
    try {
        out(name, await fn());
    } catch (e) {
        out(name, { error: String(e && e.message || e) });
    }
}

const transport = new StreamableHTTPClientTransport(new URL(url),
    { fetch: tunnelFetch });
const client = new Client({ name: "bottle-gate-test", version: "1.0.0" });

await step("connect", async () => {
    await client.connect(transport);
    return { server: client.getServerVersion() };
});

await step("tools", async () =>
    ({ names: (await client.listTools()).tools.map((t) => t.name) }));
await step("resources", async () =>
    ({ names: (await client.listResources()).resources.map((r) => r.uri) }));
await step("templates", async () =>
    ({ names: (await client.listResourceTemplates()).resourceTemplates
        .map((r) => r.uriTemplate) }));
await step("prompts", async () =>
    ({ names: (await client.listPrompts()).prompts.map((p) => p.name) }));

await step("call echo", async () =>
    await client.callTool({ name: "echo", arguments: { text: "hi" } }));
await step("call delete_repo", async () =>
    await client.callTool({ name: "delete_repo",
                            arguments: { text: "all" } }));
await step("call admin_reset", async () =>
    await client.callTool({ name: "admin_reset", arguments: {} }));
await step("read readme", async () =>
    await client.readResource({ uri: "file:///public/readme" }));
await step("read keys", async () =>
    await client.readResource({ uri: "file:///secret/keys" }));
await step("prompt greet", async () =>
    await client.getPrompt({ name: "greet" }));
await step("prompt jailbreak", async () =>
    await client.getPrompt({ name: "jailbreak" }));

await client.close();
process.exit(0);
