// t/operator_page.t's browser half: Debian's chromium, headless, driven by
// playwright-core.  Queues and answers proposals with bottlectl as another
// operator would, and prints one JSON object of what the page showed; the
// .t file asserts on it and on the store.
//
// env: OP_URL, OP_PASSWORD, BOTTLECTL, BOTTLE_STORE, CHROMIUM (optional),
// FORGE_URL and FORGE_TOKEN (the fake forge: Connect… and Create),
// REDIS_PORT (refusals written into the journal), SHOTS (a directory for
// screenshots, optional)

'use strict';

const { chromium } = require('playwright-core');
const { execFileSync } = require('child_process');

const URL_ = process.env.OP_URL;
const out = { errors: [] };

function ctl(args, env) {
    return execFileSync(process.env.BOTTLECTL, args, {
        env: Object.assign({}, process.env, env || {}),
        encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']
    }).trim();
}

function propose(bottle, kind, args, justification) {
    return ctl(['propose', bottle, kind, JSON.stringify(args),
                '--justification', justification]);
}

async function card(page, id) {
    const li = page.locator(`li.proposal[data-id="${id}"]`);
    await li.waitFor({ state: 'visible', timeout: 5000 });
    return li;
}

function xadd(event) {
    return execFileSync('redis-cli', ['-h', '127.0.0.1', '-p',
                        process.env.REDIS_PORT, 'XADD', 'bottle:audit', '*',
                        'event', JSON.stringify(event)],
                        { encoding: 'utf8' }).trim();
}

async function shot(page, name, whole) {
    if (process.env.SHOTS) {
        await page.screenshot({ path: `${process.env.SHOTS}/${name}.png`,
                                fullPage: whole !== false });
    }
}

async function logLine(page, id, cls) {
    const l = page.locator(`#log li.${cls}`, { hasText: id });
    await l.first().waitFor({ timeout: 5000 });
    return l.first().textContent();
}

(async () => {
    const browser = await chromium.launch({
        executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
        args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage']
    });

    try {
        // no credential: 401, nothing of the page
        const anon = await browser.newContext();
        const ap = await anon.newPage();
        // chromium gives up on the challenge (no credential to offer)
        const [r0] = await Promise.all([
            ap.waitForResponse(URL_),
            ap.goto(URL_).catch(e => {
                out.anon_error = String(e.message).split('\n')[0];
            })
        ]);
        out.anon_status = r0.status();
        out.anon_auth = r0.headers()['www-authenticate'] || '';
        out.anon_body = await r0.text().catch(() => '');
        await anon.close();

        const ctx = await browser.newContext({
            httpCredentials: { username: 'operator',
                               password: process.env.OP_PASSWORD }
        });
        const page = await ctx.newPage();
        out.dialogs = 0;
        page.on('dialog', d => { out.dialogs++; d.dismiss(); });
        page.on('pageerror', e => out.errors.push(String(e)));

        const r1 = await page.goto(URL_);
        out.status = r1.status();
        out.csp = r1.headers()['content-security-policy'] || '';
        await page.locator('#status', { hasText: 'updated' })
            .waitFor({ timeout: 5000 });

        // a marker a reload would lose
        await page.evaluate(() => { window.__loaded_once = 1; });

        // queued after the page loaded: appears without a reload
        const p1 = propose('alice', 'egress-allow',
                           { host: 'one.example', methods: ['GET'] },
                           'read the docs');
        out.p1 = p1;
        const c1 = await card(page, p1);
        out.p1_seen = true;
        out.p1_kind = await c1.locator('.kind').textContent();
        out.p1_bottle = await c1.locator('.bottle').textContent();
        out.p1_summary = await c1.locator('.summary').textContent();
        out.p1_age = await c1.locator('.age').textContent();
        out.p1_justification = await c1.locator('.justification')
            .textContent();
        out.no_reload = await page.evaluate(() => window.__loaded_once === 1);

        // approve with a note
        await c1.locator('input.note').fill('page note 1');
        await c1.locator('button.approve').click();
        out.p1_log = await logLine(page, p1, 'ok');

        // deny
        const p2 = propose('alice', 'egress-allow', { host: 'two.example' },
                           'more');
        out.p2 = p2;
        const c2 = await card(page, p2);
        await c2.locator('input.note').fill('no need');
        await c2.locator('button.deny').click();
        out.p2_log = await logLine(page, p2, 'ok');

        // modify: the operator's route
        const p3 = propose('alice', 'egress-allow',
                           { host: 'three.example',
                             methods: ['GET', 'POST'] }, 'write access');
        out.p3 = p3;
        const c3 = await card(page, p3);
        await c3.locator('button.modify').click();
        out.p3_template = await c3.locator('textarea.grant').inputValue();
        await c3.locator('textarea.grant').fill(JSON.stringify(
            { host: 'three.example', methods: ['GET'] }));
        await c3.locator('input.note').fill('read-only');
        await c3.locator('button.modify').click();
        out.p3_log = await logLine(page, p3, 'ok');

        // a bad modify: 400 with the reason, still pending
        const p3b = propose('alice', 'egress-allow',
                            { host: 'bad.example' }, 'x');
        out.p3b = p3b;
        const c3b = await card(page, p3b);
        await c3b.locator('button.modify').click();
        await c3b.locator('textarea.grant').fill(JSON.stringify(
            { host: 'bad.example', colour: 'red' }));
        await c3b.locator('button.modify').click();
        out.p3b_log = await logLine(page, '400', 'err');

        // another operator answers first: the page's answer gets 409
        const p4 = propose('alice', 'egress-allow', { host: 'four.example' },
                           'race');
        out.p4 = p4;
        const c4 = await card(page, p4);
        await page.route('**/api/proposals', r => r.abort());  // keep the card
        out.p4_cli = ctl(['approve', p4, '--note', 'cli first'],
                         { BOTTLE_OPERATOR: 'op-cli' });
        await c4.locator('button.deny').click();
        await c4.locator('.result', { hasText: '409' })
            .waitFor({ timeout: 5000 });
        out.p4_result = await c4.locator('.result').textContent();
        await page.unroute('**/api/proposals');

        // the agent's words are text, never markup
        const xss = '<img src=x onerror="window.__xss=1;alert(1)">'
                    + '<script>window.__xss=2</script>';
        const p5 = propose('alice', 'egress-allow', { host: 'five.example' },
                           xss);
        out.p5 = p5;
        out.xss = xss;
        const c5 = await card(page, p5);
        out.p5_text = await c5.locator('.justification').textContent();
        out.p5_children = await c5.locator('.justification')
            .evaluate(e => e.children.length);
        out.p5_imgs = await page.locator('img').count();
        await page.waitForTimeout(300);
        out.xss_ran = await page.evaluate(() => window.__xss !== undefined);

        // no plain allow: an add-repo card has no Approve
        const p6 = propose('alice', 'add-repo',
                           { repo: 'git.example/acme/w', write: true },
                           'need it');
        out.p6 = p6;
        const c6 = await card(page, p6);
        out.p6_approve = await c6.locator('button.approve').count();
        out.p6_grant = await c6.locator('button.modify').count();

        // forge-connect: Connect… with the operator's token, a wrong one
        // first (the card stays, the field is emptied)
        const fhost = process.env.FORGE_URL.replace(/^https?:\/\//, '');
        const p7 = propose('alice', 'forge-connect',
                           { url: process.env.FORGE_URL + '/' },
                           'need the forge');
        out.p7 = p7;
        const c7 = await card(page, p7);
        out.p7_approve = await c7.locator('button.approve').count();
        await c7.locator('button.connect').click();
        out.p7_token_type = await c7.locator('input.forge-token')
            .getAttribute('type');
        await c7.locator('select.forge-kind').selectOption('gitea');
        await c7.locator('input.forge-token').fill('not-the-token');
        await c7.locator('button.connect').click();
        await c7.locator('.result', { hasText: '502' })
            .waitFor({ timeout: 10000 });
        out.p7_fail = await c7.locator('.result').textContent();
        out.p7_token_after = await c7.locator('input.forge-token')
            .inputValue();
        await c7.locator('input.forge-token')
            .fill(process.env.FORGE_TOKEN);
        await c7.locator('button.connect').click();
        out.p7_log = await logLine(page, p7, 'ok');
        out.p7_html = await page.content();

        // create-repo: Create makes it on the forge and grants it
        const p8 = propose('alice', 'create-repo',
                           { repo: fhost + '/forge-user/from-page' },
                           'a new repo');
        out.p8 = p8;
        const c8 = await card(page, p8);
        out.p8_approve = await c8.locator('button.approve').count();
        await c8.locator('button.create').click();
        out.p8_log = await logLine(page, p8, 'ok');

        // launch-bottle: Launch… with fewer bottles
        const p9 = propose('alice', 'launch-bottle',
                           { agent: 'claude', prompt: 'fix it',
                             bottles: ['base', 'extra'], label: 'child' },
                           'a child');
        out.p9 = p9;
        const c9 = await card(page, p9);
        out.p9_label = await c9.locator('button.modify').textContent();
        await c9.locator('button.modify').click();
        out.p9_template = await c9.locator('textarea.grant').inputValue();
        await c9.locator('textarea.grant').fill(JSON.stringify(
            { bottles: ['base'] }));
        await c9.locator('button.modify').click();
        out.p9_log = await logLine(page, p9, 'ok');

        // recent decisions list the page's answers
        await page.locator(`#decisions tr[data-id="${p1}"]`)
            .waitFor({ timeout: 5000 });
        out.p1_row = await page.locator(`#decisions tr[data-id="${p1}"]`)
            .textContent();

        // the case: "need DELETE too" for a host whose route
        // injects a credential; the card shows the diff and the warning
        await page.setViewportSize({ width: 1400, height: 1000 });
        const g1 = propose('alice', 'egress-allow',
                           { host: 'api.github.com',
                             methods: ['GET', 'POST', 'DELETE'] },
                           'need DELETE too');
        out.g1 = g1;
        const cg = await card(page, g1);
        await cg.locator('li.warning').first()
            .waitFor({ timeout: 10000 });
        out.g1_head = await cg.locator('.change-head').textContent();
        out.g1_warnings = await cg.locator('li.warning').allTextContents();
        out.g1_diff = await cg.locator('pre.diff').textContent();
        out.g1_label = await cg.locator('button.modify').textContent();
        await shot(page, 'p3-card-warning');

        // Modify: the label says what the next click does, the diff
        // follows the edited route before anything is decided
        await cg.locator('button.modify').click();
        out.g1_label2 = await cg.locator('button.modify').textContent();
        const keep = { host: 'api.github.com',
                       methods: ['GET', 'POST', 'DELETE'],
                       auth: { type: 'bearer', value: 'secret:GH' } };
        await cg.locator('textarea.grant').fill(JSON.stringify(keep));
        await cg.locator('.change-head', { hasText: 'modifying it so' })
            .waitFor({ timeout: 10000 });
        await page.waitForFunction(id => {
            const li = document.querySelector(
                `li.proposal[data-id="${id}"]`);
            const w = li && li.querySelectorAll('li.warning');
            return w && w.length === 1;
        }, g1, { timeout: 10000 });
        out.g1_mod_head = await cg.locator('.change-head').textContent();
        out.g1_mod_warnings = await cg.locator('li.warning')
            .allTextContents();
        out.g1_mod_diff = await cg.locator('pre.diff').textContent();
        out.g1_state_mid = JSON.parse(ctl(['--json', 'show', g1])).state;
        await shot(page, 'p3-card-modify');
        await cg.locator('input.note').fill('keep the token');
        await cg.locator('button.modify').click();
        out.g1_log = await logLine(page, g1, 'ok');

        // filters: by kind (server-side), then all again
        await page.locator('#f-kind').selectOption('add-repo');
        await page.waitForFunction(() => {
            const c = document.querySelectorAll('li.proposal');
            return c.length > 0 && Array.prototype.every.call(c,
                e => e.querySelector('.kind').textContent === 'add-repo');
        }, null, { timeout: 10000 });
        out.kind_cards = await page.locator('li.proposal .kind')
            .allTextContents();
        out.kind_count = await page.locator('#count').textContent();
        await page.locator('#f-kind').selectOption('');

        // the live feed: refusals written to the journal after load,
        // markup in what the bottle chose (host, reason) shown as text
        const xh = '<img src=x onerror="window.__xss=3">.example';
        const xr = '<b>no</b> route <script>window.__xss=4</script>';
        xadd({ v: 1, id: 't-1', time: '2026-12-03T20:00:00.000Z',
               producer: 'egress', type: 'egress.first_contact',
               gateway: 't', bottle: 'alice', host: 'contact.example',
               correlation_id: 'c0' });
        out.feed_entry = xadd({ v: 1, id: 't-2',
               time: '2026-12-03T20:00:01.000Z', producer: 'egress',
               type: 'egress.refusal', gateway: 't', bottle: 'alice',
               host: xh, correlation_id: 'c1', rule: 'no_route',
               status: 403, reason: xr, method: 'GET', port: 443,
               future_field: 'ignored' });
        xadd({ v: 1, id: 't-3', time: '2026-12-03T20:00:02.000Z',
               producer: 'git-gate', type: 'git.push', gateway: 't',
               bottle: 'alice', host: 'github.com', correlation_id: null,
               repo: 'github.com/acme/widgets', refs: [],
               verdict: 'refused', rule: 'github_pat_classic',
               reason: 'a token in the push' });
        const fi = page.locator('#feed li.refusal', { hasText: 'no_route' });
        await fi.first().waitFor({ timeout: 10000 });
        out.feed_host = await fi.first().locator('.host').textContent();
        out.feed_reason = await fi.first().locator('.reason').textContent();
        out.feed_children = await fi.first()
            .evaluate(e => e.querySelectorAll('img,b,script').length);
        await page.locator('#feed li.refusal', { hasText: 'push refused' })
            .first().waitFor({ timeout: 10000 });
        out.feed_texts = await page.locator('#feed li.refusal')
            .allTextContents();
        out.feed_imgs = await page.locator('img').count();
        out.xss_ran2 = await page.evaluate(() => window.__xss !== undefined);

        // the bottles view: alice, her routes, pending, decisions and
        // refusals
        const brow = page.locator('#bottles tr[data-id="alice"]');
        await brow.waitFor({ timeout: 10000 });
        out.bottle_row = await brow.textContent();
        await brow.locator('button.link').click();
        await page.locator('#b-refusals li.refusal').first()
            .waitFor({ timeout: 10000 });
        out.b_id = await page.locator('#b-id').textContent();
        out.b_routes = await page.locator('#b-routes li').allTextContents();
        out.b_pending = await page.locator('#b-pending li')
            .allTextContents();
        out.b_decisions = await page.locator('#b-decisions li')
            .allTextContents();
        out.b_refusals = await page.locator('#b-refusals li')
            .allTextContents();
        await shot(page, 'p3-bottles');

        // no silent cap: 230 pending for bob, paged, the total shown
        const bob = [];
        for (let i = 0; i < 230; i++) {
            bob.push(propose('bob', 'egress-allow',
                             { host: `h${i}.bob.example` }, `n${i}`));
        }
        out.bob_last = bob[229];
        await page.locator('#f-bottle option[value="bob"]')
            .waitFor({ state: 'attached', timeout: 10000 });
        await page.locator('#f-bottle').selectOption('bob');
        await page.locator('#count', { hasText: '(230 of' })
            .waitFor({ timeout: 10000 });
        out.bob_count = await page.locator('#count').textContent();
        out.bob_range1 = await page.locator('#range').textContent();
        out.bob_cards1 = await page.locator('li.proposal').count();
        for (let i = 0; i < 4; i++) {
            await page.locator('#next').click();
            await page.locator('#range', { hasText: `${i * 50 + 51}–` })
                .waitFor({ timeout: 10000 });
        }
        await card(page, bob[229]);
        out.bob_range5 = await page.locator('#range').textContent();
        out.bob_cards5 = await page.locator('li.proposal').count();
        out.bob_next_disabled = await page.locator('#next').isDisabled();
        await shot(page, 'p3-paged', false);

        await ctx.close();
    } catch (e) {
        out.errors.push(String(e && e.stack || e));
    } finally {
        await browser.close();
    }

    process.stdout.write(JSON.stringify(out) + '\n');
})();
