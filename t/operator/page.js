// t/operator_page.t's browser half: Debian's chromium, headless, driven by
// playwright-core.  Queues and answers proposals with bottlectl as another
// operator would, and prints one JSON object of what the page showed; the
// .t file asserts on it and on the store.
//
// env: OP_URL, OP_PASSWORD, BOTTLECTL, BOTTLE_STORE, CHROMIUM (optional)

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

        // recent decisions list the page's answers
        await page.locator(`#decisions tr[data-id="${p1}"]`)
            .waitFor({ timeout: 5000 });
        out.p1_row = await page.locator(`#decisions tr[data-id="${p1}"]`)
            .textContent();

        await ctx.close();
    } catch (e) {
        out.errors.push(String(e && e.stack || e));
    } finally {
        await browser.close();
    }

    process.stdout.write(JSON.stringify(out) + '\n');
})();
