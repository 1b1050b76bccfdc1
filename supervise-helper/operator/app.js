/*
 * The operator page (docs/supervise.md, "Operator page").  Every string a
 * proposal carries came from an agent: it is only ever set with textContent or
 * a form field's value, never parsed as markup, and no handler is built from
 * it.  The page polls GET /api/proposals (one page of the pending ones, its
 * filter), GET /api/refusals (the journal's newer refusals) and GET
 * /api/bottles once a second, and answers with POST /api/proposals/ID/ACTION,
 * a JSON body and the X-Bottle-Operator header.  A card's policy change (the
 * diff and its warnings, computed by the server: lib/bottle_warn.c) is read
 * with GET /api/proposals/ID, again when the bottle's policy version moves,
 * and with POST .../preview while the operator edits a grant.
 */

'use strict';

(function () {
    var POLL_MS = 1000;
    var PAGE = 50;
    var FEED_MAX = 100;
    var cards = {};         /* id -> li, so a note being typed survives */
    var clockSkew = 0;      /* server now - our now */
    var view = { offset: 0, bottle: '', kind: '' };
    var feedLast = null;    /* the journal entry the feed has seen */
    var shownBottle = null;

    function el(tag, cls, text) {
        var e = document.createElement(tag);
        if (cls) {
            e.className = cls;
        }
        if (text !== undefined && text !== null) {
            e.textContent = String(text);
        }
        return e;
    }

    function age(created) {
        var t = Date.parse(created);
        if (isNaN(t)) {
            return '';
        }
        var s = Math.max(0, Math.round((Date.now() + clockSkew - t) / 1000));
        if (s < 120) {
            return s + 's';
        }
        if (s < 7200) {
            return Math.round(s / 60) + 'm';
        }
        return Math.round(s / 3600) + 'h';
    }

    function operatorName() {
        var v = document.getElementById('operator').value.trim();
        return v || 'operator';
    }

    function log(cls, text) {
        var li = el('li', cls, text);
        var ul = document.getElementById('log');
        ul.insertBefore(li, ul.firstChild);
        while (ul.children.length > 50) {
            ul.removeChild(ul.lastChild);
        }
    }

    /* what modify starts from: the agent's route, its repo read-only, or
     * the bottles of a launch (the operator may drop some) */
    function grantTemplate(p) {
        if (p.kind === 'add-repo') {
            var repo = String(p.args.repo || '').replace(/:write$/, '');
            return JSON.stringify({ repo: repo });
        }
        if (p.kind === 'launch-bottle') {
            return JSON.stringify({ bottles: p.args.bottles || [] });
        }
        return JSON.stringify(p.args, null, 2);
    }

    /* extra: the fields of connect (kind, token, account, api) */
    function answer(p, li, action, grant, extra) {
        var body = { note: li.querySelector('input.note').value,
                     operator: operatorName() };
        if (grant !== undefined) {
            body.grant = grant;
        }
        if (extra) {
            Object.keys(extra).forEach(function (k) {
                body[k] = extra[k];
            });
        }

        var buttons = li.querySelectorAll('button');
        buttons.forEach(function (b) { b.disabled = true; });

        fetch('/api/proposals/' + encodeURIComponent(p.id) + '/' + action, {
            method: 'POST',
            credentials: 'same-origin',
            headers: { 'Content-Type': 'application/json',
                       'X-Bottle-Operator': '1' },
            body: JSON.stringify(body)
        }).then(function (r) {
            return r.json().then(function (j) { return [r.status, j]; },
                                 function () { return [r.status, {}]; });
        }).then(function (sj) {
            var status = sj[0], j = sj[1];
            if (status === 200) {
                log('ok', p.id + ' ' + j.state
                    + (j.version ? ': bottle ' + p.bottle + ' version '
                                   + j.version : '')
                    + (j.warning ? ' (warning: ' + j.warning + ')' : ''));
                li.remove();
                delete cards[p.id];
                poll();
                return;
            }
            var msg = status + ' ' + (j.error || 'failed');
            if (status === 409 && j.decision) {
                msg += ' [standing: ' + j.decision.action + ' by '
                       + j.decision.operator + ']';
            }
            log('err', msg);
            li.querySelector('.result').textContent = msg;
            buttons.forEach(function (b) { b.disabled = false; });
        }).catch(function (e) {
            log('err', p.id + ': ' + e);
            buttons.forEach(function (b) { b.disabled = false; });
        });
    }

    function api(path, body) {
        var init = { credentials: 'same-origin', cache: 'no-store' };
        if (body !== undefined) {
            init.method = 'POST';
            init.headers = { 'Content-Type': 'application/json',
                             'X-Bottle-Operator': '1' };
            init.body = JSON.stringify(body);
        }
        return fetch(path, init).then(function (r) {
            return r.json().then(function (j) { return [r.status, j]; },
                                 function () { return [r.status, {}]; });
        });
    }

    function clear(e) {
        while (e.firstChild) {
            e.removeChild(e.firstChild);
        }
    }

    /* the policy change: the server's header line, warnings, the diff */
    function showChange(li, j, status) {
        var box = li.querySelector('.change');
        clear(box);
        box.hidden = false;
        if (status !== 200) {
            box.appendChild(el('div', 'change-error',
                               status + ' ' + (j.error || 'failed')));
            return;
        }
        if (j.change_error) {
            box.appendChild(el('div', 'change-error', j.change_error));
            return;
        }
        if (typeof j.change !== 'string') {
            box.hidden = true;
            return;
        }
        box.appendChild(el('div', 'change-head', j.change.split('\n')[0]));
        var ul = el('ul', 'warnings');
        (j.warnings || []).forEach(function (w) {
            ul.appendChild(el('li', 'warning', w));
        });
        box.appendChild(ul);
        if (j.changed) {
            box.appendChild(el('pre', 'diff', j.diff));
        }
    }

    function loadChange(p, li, version) {
        li.dataset.version = String(version);
        if (li.dataset.editing === '1') {
            return;
        }
        api('/api/proposals/' + encodeURIComponent(p.id)).then(function (sj) {
            if (li.dataset.editing !== '1') {
                showChange(li, sj[1], sj[0]);
            }
        }).catch(function () { /* the next version change retries */ });
    }

    /* the edited grant's change, decided nothing */
    function previewChange(p, li, text) {
        var g;
        try {
            g = JSON.parse(text);
        } catch (e) {
            showChange(li, { error: 'the grant is not JSON: ' + e.message },
                       400);
            return;
        }
        api('/api/proposals/' + encodeURIComponent(p.id) + '/preview',
            { grant: g }).then(function (sj) {
            if (li.querySelector('textarea.grant').value === text) {
                showChange(li, sj[1], sj[0]);
            }
        }).catch(function () { /* typed on: previewed again */ });
    }

    function button(li, cls, label, fn) {
        var b = el('button', cls, label);
        b.type = 'button';
        b.addEventListener('click', fn);
        li.querySelector('.actions').appendChild(b);
        return b;
    }

    function card(p) {
        var li = el('li', 'proposal');
        li.dataset.id = p.id;

        var head = el('div', 'head');
        head.appendChild(el('span', 'kind', p.kind));
        head.appendChild(el('span', 'bottle', p.bottle));
        head.appendChild(el('span', 'id', p.id));
        head.appendChild(el('span', 'age', age(p.created)));
        li.appendChild(head);

        li.appendChild(el('div', 'summary', p.summary));
        li.appendChild(el('div', 'justification', p.justification));
        li.appendChild(el('pre', 'args', JSON.stringify(p.args, null, 2)));

        var change = el('div', 'change');
        change.hidden = true;
        li.appendChild(change);

        var actions = el('div', 'actions');
        var note = el('input', 'note');
        note.placeholder = 'note (kept with the decision)';
        note.maxLength = 4096;
        actions.appendChild(note);
        li.appendChild(actions);

        var grant = el('textarea', 'grant');
        grant.hidden = true;
        grant.spellcheck = false;
        li.appendChild(grant);
        li.appendChild(el('div', 'result'));

        var modifiable = p.kind === 'egress-allow' || p.kind === 'add-repo'
                         || p.kind === 'launch-bottle';

        if (p.grantable) {
            button(li, 'approve', 'Approve', function () {
                answer(p, li, 'approve');
            });
        }

        if (modifiable) {
            var label = p.kind === 'add-repo' ? 'Grant…'
                        : p.kind === 'launch-bottle' ? 'Launch…' : 'Modify…';
            /* what the second click does */
            var apply = p.kind === 'add-repo' ? 'Grant as edited'
                        : p.kind === 'launch-bottle' ? 'Launch as edited'
                        : 'Approve modified';
            var timer = null;
            grant.addEventListener('input', function () {
                if (p.changes_policy) {
                    clearTimeout(timer);
                    timer = setTimeout(function () {
                        previewChange(p, li, grant.value);
                    }, 250);
                }
            });
            var mb = button(li, 'modify', label, function () {
                if (grant.hidden) {
                    grant.value = grantTemplate(p);
                    grant.hidden = false;
                    mb.textContent = apply;
                    if (p.changes_policy) {
                        li.dataset.editing = '1';
                        previewChange(p, li, grant.value);
                    }
                    return;
                }
                var g;
                try {
                    g = JSON.parse(grant.value);
                } catch (e) {
                    li.querySelector('.result').textContent =
                        'the grant is not JSON: ' + e.message;
                    return;
                }
                answer(p, li, 'modify', g);
            });
        }

        if (p.kind === 'forge-connect') {
            connectForm(p, li);
        }

        if (p.kind === 'create-repo') {
            button(li, 'create', 'Create', function () {
                answer(p, li, 'create');
            });
        }

        button(li, 'deny', 'Deny', function () { answer(p, li, 'deny'); });

        if (!p.grantable && !modifiable && p.kind !== 'forge-connect'
            && p.kind !== 'create-repo')
        {
            li.appendChild(el('div', 'hint', 'never approved plainly: '
                              + 'deny it here, or grant it where it can be'));
        }

        return li;
    }

    /*
     * Connect…: the forge is the proposal's URL's (the host takes it from
     * the proposal); the operator gives the kind, the token (a password
     * field, sent once, never shown or kept), the account and the API.
     */
    function connectForm(p, li) {
        var form = el('div', 'connect');
        form.hidden = true;

        var kind = el('select', 'forge-kind');
        ['gitea', 'github'].forEach(function (k) {
            var o = el('option', null, k);
            o.value = k;
            kind.appendChild(o);
        });

        var token = el('input', 'forge-token');
        token.type = 'password';
        token.autocomplete = 'off';
        token.placeholder = 'forge token';

        var account = el('input', 'forge-account');
        account.placeholder = 'account (default: the token\'s login)';

        var api = el('input', 'forge-api');
        api.placeholder = 'API URL (default: the kind\'s)';

        [kind, token, account, api].forEach(function (e) {
            form.appendChild(e);
        });
        li.insertBefore(form, li.querySelector('.result'));

        button(li, 'connect', 'Connect…', function () {
            if (form.hidden) {
                form.hidden = false;
                token.focus();
                return;
            }
            var t = token.value;
            token.value = '';
            answer(p, li, 'connect', undefined, {
                kind: kind.value, token: t, account: account.value.trim(),
                api: api.value.trim() });
        });
    }

    function render(data) {
        var ul = document.getElementById('pending');
        var seen = {};
        var versions = data.versions || {};

        data.pending.forEach(function (p) {
            seen[p.id] = true;
            var li = cards[p.id];
            if (!li) {
                li = cards[p.id] = card(p);
                ul.appendChild(li);
            }
            li.querySelector('.age').textContent = age(p.created);
            /* the change is the bottle's policy's: read again when it moves */
            var v = versions[p.bottle] === undefined ? 0 : versions[p.bottle];
            if (p.changes_policy && li.dataset.version !== String(v)) {
                loadChange(p, li, v);
            }
        });

        Object.keys(cards).forEach(function (id) {
            if (!seen[id]) {
                cards[id].remove();
                delete cards[id];
            }
        });

        var total = data.total === undefined ? data.pending.length
                                              : data.total;
        var first = total ? data.offset + 1 : 0;
        var last = data.offset + data.pending.length;
        document.getElementById('count').textContent = '(' + total
            + (data.all !== undefined && data.all !== total
               ? ' of ' + data.all : '') + ')';
        document.getElementById('range').textContent =
            first + '–' + last + ' of ' + total;
        document.getElementById('prev').disabled = data.offset === 0;
        document.getElementById('next').disabled = last >= total;
        document.getElementById('none').hidden = total !== 0;
        if (data.offset > 0 && data.offset >= total) {
            view.offset = Math.max(0, total - (total % PAGE || PAGE));
        }

        var tbody = document.querySelector('#decisions tbody');
        clear(tbody);
        data.decisions.forEach(function (p) {
            var d = p.decision || {};
            var tr = el('tr');
            tr.dataset.id = p.id;
            [d.time, p.state, p.kind, p.bottle, p.summary, d.operator,
             d.notes].forEach(function (v) {
                tr.appendChild(el('td', null, v === undefined ? '' : v));
            });
            tbody.appendChild(tr);
        });
    }

    /* one refusal, a line: time, bottle, host, status rule: reason */
    function refusalItem(f) {
        var li = el('li', 'refusal');
        li.dataset.entry = f.entry || '';
        li.appendChild(el('span', 'time', f.time || ''));
        li.appendChild(el('span', 'bottle', f.bottle || '-'));
        li.appendChild(el('span', 'host', f.host || '-'));
        li.appendChild(el('span', 'rule', (f.status ? f.status + ' ' : '')
                          + (f.type === 'git.push' ? 'push refused: ' : '')
                          + (f.rule || '')));
        li.appendChild(el('span', 'reason', (f.method ? f.method + ' ' : '')
                          + (f.repo ? f.repo + ': ' : '') + (f.reason || '')));
        return li;
    }

    function renderFeed(data) {
        var ul = document.getElementById('feed');
        var add = data.refusals || [];
        for (var i = add.length - 1; i >= 0; i--) {
            ul.insertBefore(refusalItem(add[i]), ul.firstChild);
        }
        while (ul.children.length > FEED_MAX) {
            ul.removeChild(ul.lastChild);
        }
        document.getElementById('feed-none').hidden = ul.children.length > 0;
        feedLast = data.last;
    }

    function renderBottles(data) {
        var tbody = document.querySelector('#bottles tbody');
        var sel = document.getElementById('f-bottle');
        var have = {};
        clear(tbody);
        Array.prototype.forEach.call(sel.options, function (o) {
            have[o.value] = true;
        });
        data.bottles.forEach(function (b) {
            var tr = el('tr');
            tr.dataset.id = b.id;
            var a = el('button', 'link', b.id);
            a.type = 'button';
            a.addEventListener('click', function () { showBottle(b.id); });
            var td = el('td');
            td.appendChild(a);
            tr.appendChild(td);
            tr.appendChild(el('td', null, b.version));
            tr.appendChild(el('td', null, b.pending));
            tr.appendChild(el('td', 'routes', b.routes.map(function (r) {
                return r.host;
            }).join(', ')));
            tbody.appendChild(tr);
            if (!have[b.id]) {
                var o = el('option', null, b.id);
                o.value = b.id;
                sel.appendChild(o);
            }
        });
    }

    function fillList(id, items, fn) {
        var ul = document.getElementById(id);
        clear(ul);
        items.forEach(function (x) { ul.appendChild(fn(x)); });
        if (!items.length) {
            ul.appendChild(el('li', 'hint', 'none'));
        }
    }

    function showBottle(id) {
        shownBottle = id;
        api('/api/bottles/' + encodeURIComponent(id)).then(function (sj) {
            if (sj[0] !== 200 || shownBottle !== id) {
                return;
            }
            var j = sj[1];
            var box = document.getElementById('bottle');
            document.getElementById('b-id').textContent =
                j.bottle.id + ' (version ' + j.bottle.version + ')';
            fillList('b-routes', j.bottle.routes, function (r) {
                var li = el('li', 'route');
                li.appendChild(el('span', 'host', r.host));
                li.appendChild(el('span', 'summary', r.summary));
                return li;
            });
            fillList('b-repos', j.bottle.repos, function (r) {
                return el('li', 'repo', r);
            });
            fillList('b-pending', j.pending, function (p) {
                return el('li', 'proposal-line', p.kind + ' ' + p.summary
                          + ' (' + age(p.created) + ')');
            });
            fillList('b-decisions', j.decisions, function (p) {
                var d = p.decision || {};
                return el('li', 'decision-line', p.state + ' ' + p.kind + ' '
                          + p.summary + ' by ' + (d.operator || '?')
                          + (d.notes ? ': ' + d.notes : ''));
            });
            fillList('b-refusals', j.refusals, refusalItem);
            box.hidden = false;
        }).catch(function () { /* the next click retries */ });
    }

    function listUrl() {
        var q = [];
        if (view.bottle) {
            q.push('bottle=' + encodeURIComponent(view.bottle));
        }
        if (view.kind) {
            q.push('kind=' + encodeURIComponent(view.kind));
        }
        if (view.offset) {
            q.push('offset=' + view.offset);
        }
        return '/api/proposals' + (q.length ? '?' + q.join('&') : '');
    }

    var polling = false;
    var ticks = 0;
    var gen = 0;            /* a poll of an older view is not rendered */

    function get(path) {
        return fetch(path, { credentials: 'same-origin', cache: 'no-store' })
            .then(function (r) {
                if (!r.ok) {
                    throw new Error('HTTP ' + r.status);
                }
                return r.json();
            });
    }

    function poll() {
        if (polling) {
            return;
        }
        polling = true;
        var g = gen;
        var feedUrl = '/api/refusals'
            + (feedLast ? '?after=' + encodeURIComponent(feedLast) : '');
        /* the bottles table every few polls: it changes slowly */
        var bottles = ticks++ % 5 === 0 ? get('/api/bottles') : null;
        Promise.all([get(listUrl()), get(feedUrl), bottles])
            .then(function (all) {
                if (g !== gen) {
                    return;
                }
                var data = all[0];
                if (typeof data.now === 'number') {
                    clockSkew = data.now - Date.now();
                }
                render(data);
                renderFeed(all[1]);
                if (all[2]) {
                    renderBottles(all[2]);
                }
                document.getElementById('status').textContent =
                    'updated ' + new Date().toLocaleTimeString();
            })
            .catch(function (e) {
                document.getElementById('status').textContent =
                    'cannot update: ' + e.message;
            })
            .then(function () { polling = false; });
    }

    /* a new filter or page: the cards are the new list's */
    function reload() {
        Object.keys(cards).forEach(function (id) {
            cards[id].remove();
            delete cards[id];
        });
        gen++;
        polling = false;
        poll();
    }

    document.addEventListener('DOMContentLoaded', function () {
        var op = document.getElementById('operator');
        try {
            op.value = localStorage.getItem('bottle-operator') || '';
        } catch (e) { /* storage off */ }
        op.addEventListener('change', function () {
            try {
                localStorage.setItem('bottle-operator', op.value);
            } catch (e) { /* storage off */ }
        });
        document.getElementById('f-bottle').addEventListener('change',
            function (e) {
                view.bottle = e.target.value;
                view.offset = 0;
                reload();
            });
        document.getElementById('f-kind').addEventListener('change',
            function (e) {
                view.kind = e.target.value;
                view.offset = 0;
                reload();
            });
        document.getElementById('prev').addEventListener('click', function () {
            view.offset = Math.max(0, view.offset - PAGE);
            reload();
        });
        document.getElementById('next').addEventListener('click', function () {
            view.offset += PAGE;
            reload();
        });
        document.getElementById('b-close').addEventListener('click',
            function () {
                shownBottle = null;
                document.getElementById('bottle').hidden = true;
            });
        poll();
        setInterval(poll, POLL_MS);
    });
})();
