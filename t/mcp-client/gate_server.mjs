// An MCP server made with the official TypeScript SDK (McpServer and
// StreamableHTTPServerTransport, stateless) behind TLS on loopback, for
// t/mcp_gate.t: four tools, resources and resource templates, two prompts.
// Every HTTP request it receives is appended to RECORD as one JSON line
// (method, url, headers, body) before the SDK sees it, and every tool call,
// resource read and prompt it serves as another.
//
//   node gate_server.mjs PORT CERT KEY RECORD json|sse
//
// json: answers are application/json; sse: text/event-stream.  Three paths
// misbehave, whatever was asked (/old-sse is the old transport's stream,
// answered to a GET): /gzip answers a gzip'd JSON list, /big-json-N a
// JSON list of exactly N bytes, /big-sse
// an event stream whose second event is over 1 MiB, /notjson a broken
// JSON body.

import fs from "node:fs";
import https from "node:https";
import zlib from "node:zlib";
import { McpServer, ResourceTemplate } from
    "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from
    "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const [port, cert, key, record, mode] = process.argv.slice(2);

function rec(o) {
    fs.appendFileSync(record, JSON.stringify(o) + "\n");
}

function text(t) {
    return { content: [{ type: "text", text: t }] };
}

function make() {
    const s = new McpServer({ name: "gate-test-server", version: "1.0.0" });

    for (const name of ["echo", "add", "delete_repo", "admin_reset"]) {
        s.registerTool(name, { description: "the " + name + " tool",
                               inputSchema: { text: z.string().optional() } },
            async (args) => {
                rec({ served: "tools/call", name, args });
                return text(name + ":" + (args.text ?? ""));
            });
    }

    for (const [name, uri] of [["readme", "file:///public/readme"],
                               ["keys", "file:///secret/keys"]]) {
        s.registerResource(name, uri, { mimeType: "text/plain" },
            async (u) => {
                rec({ served: "resources/read", name: u.href });
                return { contents: [{ uri: u.href, text: name }] };
            });
    }

    for (const [name, tpl] of [["doc", "file:///public/docs/{name}"],
                               ["vault", "file:///secret/vault/{name}"]]) {
        s.registerResource(name, new ResourceTemplate(tpl,
                                                      { list: undefined }),
            {}, async (u) => {
                rec({ served: "resources/read", name: u.href });
                return { contents: [{ uri: u.href, text: name }] };
            });
    }

    for (const name of ["greet", "jailbreak"]) {
        s.registerPrompt(name, { description: "the " + name + " prompt" },
            () => {
                rec({ served: "prompts/get", name });
                return { messages: [{ role: "user",
                                      content: { type: "text",
                                                 text: name } }] };
            });
    }

    return s;
}

https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) },
    async (req, res) => {
        const chunks = [];
        for await (const c of req) {
            chunks.push(c);
        }
        const raw = Buffer.concat(chunks).toString();
        rec({ http: req.method, url: req.url, headers: req.headers,
              body: raw });

        const list = JSON.stringify({ jsonrpc: "2.0", id: 1, result: {
            tools: [{ name: "echo" }, { name: "delete_repo" }] } });

        if (req.url === "/gzip") {
            res.writeHead(200, { "content-type": "application/json",
                                 "content-encoding": "gzip" });
            res.end(zlib.gzipSync(list));
            return;
        }

        if (req.url === "/big-sse") {
            res.writeHead(200, { "content-type": "text/event-stream" });
            res.write("data: " + list + "\n\n");
            res.end("data: \"" + "x".repeat(1100000) + "delete_repo\"\n\n");
            return;
        }

        const big = /^\/big-json-(\d+)$/.exec(req.url);
        if (big) {
            /* a list of exactly that many bytes: a description pads it */
            const head = '{"jsonrpc":"2.0","id":1,"result":{"tools":[' +
                '{"name":"echo"},{"name":"delete_repo","description":"';
            const tail = '"}]}}';
            const n = Number(big[1]) - head.length - tail.length;
            res.writeHead(200, { "content-type": "application/json" });
            res.end(head + "y".repeat(n) + tail);
            return;
        }

        if (req.url === "/old-sse") {
            /* the HTTP+SSE transport's GET stream: an endpoint, then an
             * answer to a request POSTed elsewhere */
            res.writeHead(200, { "content-type": "text/event-stream" });
            res.write("event: endpoint\ndata: /messages?sessionId=s1\n\n");
            res.end("event: message\ndata: " + list.replace('"id":1',
                                                             '"id":9')
                    + "\n\n");
            return;
        }

        if (req.url === "/notjson") {
            res.writeHead(200, { "content-type": "application/json" });
            res.end(list.slice(0, -2));
            return;
        }

        let parsed;
        try {
            parsed = raw ? JSON.parse(raw) : undefined;
        } catch {
            res.writeHead(400).end("not JSON\n");
            return;
        }

        const server = make();
        const transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: undefined,
            enableJsonResponse: mode === "json" });
        res.on("close", () => { transport.close(); server.close(); });
        await server.connect(transport);
        await transport.handleRequest(req, res, parsed);
    }).listen(+port, "127.0.0.1", () => console.log("ready"));
