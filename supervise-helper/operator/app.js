/*
 * The operator page (docs/supervise.md, "Operator page").  Every string a
 * proposal carries came from an agent: it is only ever set with textContent or
 * a form field's value, never parsed as markup, and no handler is built from
 * it.  The page polls GET /api/proposals once a second and answers with POST
 * /api/proposals/ID/ACTION, a JSON body and the X-Bottle-Operator header.
 */

'use strict';

(function () {
    var POLL_MS = 1000;
    var cards = {};         /* id -> li, so a note being typed survives */
    var clockSkew = 0;      /* server now - our now */

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

    /* what modify starts from: the agent's route, or its repo read-only */
    function grantTemplate(p) {
        if (p.kind === 'add-repo') {
            var repo = String(p.args.repo || '').replace(/:write$/, '');
            return JSON.stringify({ repo: repo });
        }
        return JSON.stringify(p.args, null, 2);
    }

    function answer(p, li, action, grant) {
        var body = { note: li.querySelector('input.note').value,
                     operator: operatorName() };
        if (grant !== undefined) {
            body.grant = grant;
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

        var modifiable = p.kind === 'egress-allow' || p.kind === 'add-repo';

        if (p.grantable) {
            button(li, 'approve', 'Approve', function () {
                answer(p, li, 'approve');
            });
        }

        if (modifiable) {
            var label = p.kind === 'add-repo' ? 'Grant…' : 'Modify…';
            button(li, 'modify', label, function () {
                if (grant.hidden) {
                    grant.value = grantTemplate(p);
                    grant.hidden = false;
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

        button(li, 'deny', 'Deny', function () { answer(p, li, 'deny'); });

        if (!p.grantable && !modifiable) {
            li.appendChild(el('div', 'hint', 'never approved plainly: '
                              + 'deny it here, or grant it where it can be'));
        }

        return li;
    }

    function render(data) {
        var ul = document.getElementById('pending');
        var seen = {};

        data.pending.forEach(function (p) {
            seen[p.id] = true;
            var li = cards[p.id];
            if (!li) {
                li = cards[p.id] = card(p);
                ul.appendChild(li);
            }
            li.querySelector('.age').textContent = age(p.created);
        });

        Object.keys(cards).forEach(function (id) {
            if (!seen[id]) {
                cards[id].remove();
                delete cards[id];
            }
        });

        document.getElementById('count').textContent =
            '(' + data.pending.length + ')';
        document.getElementById('none').hidden = data.pending.length !== 0;

        var tbody = document.querySelector('#decisions tbody');
        while (tbody.firstChild) {
            tbody.removeChild(tbody.firstChild);
        }
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

    var polling = false;

    function poll() {
        if (polling) {
            return;
        }
        polling = true;
        fetch('/api/proposals', { credentials: 'same-origin',
                                  cache: 'no-store' })
            .then(function (r) {
                if (!r.ok) {
                    throw new Error('HTTP ' + r.status);
                }
                return r.json();
            })
            .then(function (data) {
                if (typeof data.now === 'number') {
                    clockSkew = data.now - Date.now();
                }
                render(data);
                document.getElementById('status').textContent =
                    'updated ' + new Date().toLocaleTimeString();
            })
            .catch(function (e) {
                document.getElementById('status').textContent =
                    'cannot update: ' + e.message;
            })
            .then(function () { polling = false; });
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
        poll();
        setInterval(poll, POLL_MS);
    });
})();
