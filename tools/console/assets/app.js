// lapse console: the pages, drawn from the JSON under /api/ (names as in
// lapse-scale's --json). Everything from the server is put in the page as
// text (textContent), never as HTML. Live pages poll the server's shared
// snapshot (GET /api/status, /api/due, /api/offline): the server reads
// Redis once per interval however many pages poll.
'use strict';
(function () {
  const main = document.getElementById('main');
  const fresh = document.getElementById('fresh');
  let conf = { ns: '', writes: false, refresh_ms: 1000 };
  let timers = [];
  let seq = 0; // a page drawn after a newer route is dropped

  // ---- DOM helpers
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    return e;
  }
  const SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  function table(caption, heads, rows) {
    return el('div', { class: 'scroll' },
      el('table', {},
        caption ? el('caption', { class: 'note', text: caption }) : null,
        el('thead', {}, el('tr', {}, heads.map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, rows)));
  }
  function td(v, text) { return el('td', text ? { class: 'text' } : {}, v instanceof Node ? v : String(v)); }
  function show(...kids) { main.replaceChildren(...kids); }

  // ---- formats
  function dur(ms) {
    const a = Math.abs(ms), s = Math.floor(a / 1000);
    if (a < 100000) return (Math.floor(a / 100) / 10).toFixed(1) + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
    return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
  }
  function fromNow(ms, now) { return ms >= now ? 'in ' + dur(ms - now) : dur(now - ms) + ' ago'; }
  function iso(ms) { return ms === null || ms === undefined ? '-' : new Date(ms).toISOString(); }
  function num(v) { return v === null || v === undefined ? '-' : Number(v).toLocaleString('en'); }
  function idLink(id) { return el('a', { href: '#/id/' + encodeURIComponent(id), text: id }); }

  // ---- the server
  async function api(path, opts) {
    let r;
    try {
      r = await fetch(path, Object.assign({ cache: 'no-store', headers: { Accept: 'application/json' } }, opts || {}));
    } catch (e) {
      return { status: 0, body: { error: 'the console does not answer: ' + e.message } };
    }
    let body;
    try { body = await r.json(); } catch (e) { body = { error: 'not JSON (HTTP ' + r.status + ')' }; }
    return { status: r.status, body: body };
  }
  function every(ms, fn) {
    let busy = false;
    const run = async () => { if (busy) return; busy = true; try { await fn(); } finally { busy = false; } };
    run();
    timers.push(setInterval(run, ms));
  }
  function freshness(read) {
    if (!read) { fresh.textContent = ''; return; }
    fresh.textContent = 'Read from Redis at ' + iso(read) + ' (' + dur(Date.now() - read) +
      ' ago); the server reads again at most every ' + dur(conf.refresh_ms) + ' while pages are open.';
  }
  function failure(title, r) {
    return [el('h1', { text: title }), el('p', { class: 'bad', role: 'alert', text: r.body.error || ('HTTP ' + r.status) })];
  }

  // ---- page: the namespace (status --json)
  async function pageStatus(my) {
    every(conf.refresh_ms, async () => {
      const r = await api('/api/status');
      if (my !== seq) return;
      if (r.status !== 200) { show(...failure('Namespace', r)); return; }
      const s = r.body;
      freshness(s.read_ms);
      const kids = [el('h1', { text: 'Namespace ' + s.ns })];
      kids.push(el('p', { id: 'summary' }, s.shards + ' shards, state ', el('strong', { text: s.state }), ', epoch ' + s.epoch));
      if (s.state !== 'stable') {
        const what = s.state === 'merging' ? 'Merge' : 'Split';
        const left = s.to_move;
        const b = el('div', { class: 'banner', id: 'change', role: 'status' },
          el('strong', { text: what + ' in progress: ' + s.prev_shards + ' → ' + s.shards + ' shards. ' }),
          left === null ? 'IDs left to move: not known (a shard was not read).'
            : num(left) + ' IDs left to move' + (left > 0 && s.last_to_move_due_ms
              ? '; at the latest when the last falls due, ' + iso(s.last_to_move_due_ms) + ' (' + fromNow(s.last_to_move_due_ms, Date.now()) + ').'
              : '.'),
          left > 0 ? el('span', { class: 'note', text: ' (lapse-scale finish --drain moves them now)' }) : null);
        kids.push(b);
      }
      if (s.interrupted) {
        kids.push(el('p', { class: 'bad', role: 'alert', text: 'A ' + s.interrupted.command + ' to epoch ' + s.interrupted.epoch +
          ' is under way or was interrupted: writers and scanners wait until it ends.' }));
      }
      let offline = 0;
      const rows = (s.shard_info || []).map((x) => {
        if (x.error) return el('tr', {}, td(x.shard), td(x.node, true), el('td', { colspan: 7, class: 'bad text', text: x.error }));
        offline += x.offline || 0;
        return el('tr', {}, td(x.shard), td(x.primary ? x.slot + '@' + x.primary : x.node, true), td(num(x.pending)),
          td(num(x.due)), td(num(x.inflight)),
          el('td', { class: x.overdue_ms !== null && x.overdue_ms > 0 ? 'bad' : null, text: x.overdue_ms === null ? '-' : dur(x.overdue_ms) }),
          td('to_move' in x ? num(x.to_move) : '-'), td(num(x.offline)),
          x.scanner ? td(x.scanner, true) : el('td', { class: 'bad text', text: 'none' }));
      });
      kids.push(el('h2', { text: 'Shards' }),
        table(null, ['shard', 'node', 'pending', 'due', 'in flight', 'overdue', 'to move', 'offline', 'active scanner'], rows));
      if (offline) kids.push(el('p', {}, num(offline) + ' IDs offline: ', el('a', { href: '#/offline', text: 'who' })));
      kids.push(el('h2', { text: 'Nodes' }), table(null, ['node', 'reached', 'primary', 'replicas', 'lag'],
        (s.nodes || []).map((n) => el('tr', {}, td(n.name, true), td(n.via + (n.tls ? ', tls' : '')), td(n.primary, true),
          td(n.replicas_online === null ? '?' : n.replicas_online), td(n.replica_lag_s === null ? '-' : n.replica_lag_s + ' s')))));
      kids.push(el('h2', { text: 'Memory' }), table(null, ['node', 'primary', 'used', 'maxmemory', 'policy'],
        (s.memory || []).map((m) => el('tr', {}, td(m.node, true), td(m.primary, true), td(bytes(m.used_memory)),
          td(m.maxmemory ? bytes(m.maxmemory) : 'none'), td(m.maxmemory_policy || '?')))));
      show(...kids);
    });
  }
  function bytes(n) {
    if (n === null || n === undefined) return '-';
    const u = ['B', 'KB', 'MB', 'GB', 'TB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : n) + ' ' + u[i];
  }

  // ---- page: what falls due when (status --due --json)
  function chart(ranges, counts, label) {
    const w = 60 * ranges.length + 20, h = 170, top = Math.max(1, ...counts);
    const g = svg('svg', { class: 'chart', viewBox: '0 0 ' + w + ' ' + h, width: w, height: h, role: 'img', 'aria-label': label });
    g.append(svg('title', {}, label));
    ranges.forEach((r, i) => {
      const bh = Math.round((counts[i] / top) * 110), x = 15 + i * 60;
      g.append(svg('rect', { class: 'bar' + (r.name === 'overdue' ? ' over' : ''), x: x, y: 130 - bh, width: 40, height: Math.max(bh, 1) }));
      g.append(svg('text', { x: x + 20, y: 124 - bh, 'text-anchor': 'middle' }, num(counts[i])));
      g.append(svg('text', { x: x + 20, y: 148, 'text-anchor': 'middle' }, r.header));
    });
    return g;
  }
  // a shard's pending IDs by range, as long as its share of the largest shard's
  function strip(ranges, x, most) {
    const total = (most || 1);
    const g = svg('svg', { class: 'chart', viewBox: '0 0 120 12', width: 120, height: 12, role: 'img',
      'aria-label': ranges.map((r) => r.header + ' ' + x[r.name]).join(', ') });
    let at = 0;
    ranges.forEach((r, i) => {
      const w = (x[r.name] / total) * 120;
      if (w > 0) g.append(svg('rect', { x: at, y: 0, width: w, height: 12, class: 'bar' + (r.name === 'overdue' ? ' over' : ''), opacity: 1 - i * 0.12 }));
      at += w;
    });
    return g;
  }
  async function pageDue(my) {
    every(conf.refresh_ms, async () => {
      const r = await api('/api/due');
      if (my !== seq) return;
      if (r.status !== 200) { show(...failure('Due times', r)); return; }
      const d = r.body, ranges = d.ranges, t = d.total;
      freshness(d.read_ms);
      const kids = [el('h1', { text: 'What falls due when' }),
        el('p', {}, d.shards + ' shards, state ' + d.state + '. Pending deadlines by when they fall due, on each shard\'s Redis clock; in flight: being dispatched.')];
      kids.push(el('h2', { text: 'All shards' }),
        chart(ranges, ranges.map((x) => t[x.name]), 'Pending deadlines of all shards by when they fall due: ' +
          ranges.map((x) => x.header + ' ' + t[x.name]).join(', ')),
        el('p', { id: 'due-total' }, num(t.pending) + ' pending, ' + num(t.inflight) + ' in flight. Next deadline: ' +
          (t.next_due_ms === null ? 'none to come' : iso(t.next_due_ms) + ' (' + fromNow(t.next_due_ms, Date.now()) + '), shard ' + t.next_due_shard) +
          (t.unread_shards ? '. ' + t.unread_shards + ' shards could not be read.' : '.')));
      const most = Math.max(1, ...d.shard_info.map((x) => x.error ? 0 : x.pending - x.inflight));
      const rows = d.shard_info.map((x) => x.error
        ? el('tr', {}, td(x.shard), td(x.node, true), el('td', { colspan: ranges.length + 3, class: 'bad text', text: x.error }))
        : el('tr', {}, td(x.shard), ranges.map((g) => td(num(x[g.name]))), td(num(x.inflight)), td(num(x.pending)), el('td', {}, strip(ranges, x, most))));
      kids.push(el('h2', { text: 'Per shard' }), table(null, ['shard'].concat(ranges.map((g) => g.header), ['in flight', 'pending', 'by range']), rows));
      show(...kids);
    });
  }

  // ---- page: who is offline (offline --json, a page at a time)
  async function pageOffline(my, q) {
    const prefix = q.get('prefix') || '', cursor = q.get('cursor') || '';
    const form = el('form', { id: 'offline-filter', onsubmit: (e) => {
      e.preventDefault();
      const p = form.querySelector('input').value;
      location.hash = '#/offline' + (p ? '?prefix=' + encodeURIComponent(p) : '');
    } }, el('label', { for: 'offline-prefix', text: 'IDs starting with' }),
    el('input', { id: 'offline-prefix', value: prefix, autocomplete: 'off', spellcheck: 'false', maxlength: 512 }),
    el('button', { type: 'submit', text: 'Filter' }));
    const out = el('div', { id: 'offline-list' }, el('p', { text: 'Loading…' }));
    show(el('h1', { text: 'Offline now' }),
      el('p', { class: 'note', text: 'IDs written with recovery on (watch) whose timeout fired and that have not been written since.' }),
      form, out);
    const draw = async () => {
      const qs = new URLSearchParams();
      if (prefix) qs.set('prefix', prefix);
      if (cursor) qs.set('cursor', cursor);
      const r = await api('/api/offline' + (qs.toString() ? '?' + qs : ''));
      if (my !== seq) return;
      if (r.status !== 200) { out.replaceChildren(el('p', { class: 'bad', role: 'alert', text: r.body.error })); return; }
      const o = r.body, now = Date.now();
      freshness(o.read_ms);
      const kids = [];
      const scanned = o.shards_from + o.shards_scanned;
      kids.push(el('p', { id: 'offline-count' }, o.offline.length ? num(o.offline.length) + ' IDs offline on this page, longest first'
        : 'No IDs offline' + (prefix ? ' whose ID starts with “' + prefix + '”' : '') + ' in the shards read',
      o.truncated ? ' (read shards ' + o.shards_from + ' to ' + (scanned - 1 < o.shards_from ? o.shards_from : scanned - 1) + ' of ' + o.shards + ': partial)' : '', '.'));
      if (o.offline.length) {
        kids.push(table(null, ['id', 'shard', 'deadline', 'offline since', 'offline for'], o.offline.map((x) =>
          el('tr', {}, el('td', { class: 'text' }, idLink(x.id)), td(x.shard), td(iso(x.deadline_ms)), td(iso(x.since_ms)), td(dur(now - x.since_ms))))));
      }
      const nav = el('p', {});
      if (cursor) nav.append(el('a', { href: '#/offline' + (prefix ? '?prefix=' + encodeURIComponent(prefix) : ''), text: 'First page' }), ' ');
      if (o.cursor) {
        const qn = new URLSearchParams();
        if (prefix) qn.set('prefix', prefix);
        qn.set('cursor', o.cursor);
        nav.append(el('a', { href: '#/offline?' + qn, id: 'offline-next', text: 'Next page' }));
      }
      kids.push(nav);
      out.replaceChildren(...kids);
    };
    // the first page without a filter is the shared snapshot: it is polled;
    // a filtered or later page is read once (the server reads Redis for it)
    if (!prefix && !cursor) every(conf.refresh_ms, draw); else await draw();
  }

  // ---- page: one ID (get --json)
  function place(p, now) {
    const rows = [['shard', p.shard], ['node', p.node + (p.address && p.address !== p.node ? ' (reached at ' + p.address + ')' : '')]];
    if (p.deadline_ms !== null) rows.push(['deadline', el('span', {}, iso(p.deadline_ms) + ' ', el('strong', { class: 'remaining', 'data-deadline': p.deadline_ms, 'data-now': p.now_ms, text: fromNow(p.deadline_ms, p.now_ms) }))]);
    else rows.push(['deadline', p.in_flight ? 'none pending: it is being dispatched' : 'none pending']);
    rows.push(['in flight', p.in_flight ? 'yes, ' + (p.leased_by === 'split move' ? 'taken by a producer moving it' : 'claimed by the scanner') + '; lease until ' + iso(p.lease_until_ms) + ', deadline dispatched ' + iso(p.inflight_deadline_ms) : 'no']);
    rows.push(['payload', 'payload' in p ? el('div', {}, p.payload_bytes + ' bytes', el('pre', { text: p.payload_preview })) : 'none']);
    rows.push(['repeat', p.repeat ? 'every ' + num(p.repeat.period_ms) + ' ms, fired ' + p.repeat.fired + ' times, next seq ' + p.repeat.next_seq : 'no']);
    rows.push(['scanner', p.scanner || 'none']);
    return el('dl', {}, rows.map(([k, v]) => [el('dt', { text: k }), el('dd', {}, v)]));
  }
  function tickRemaining() {
    const skew = Date.now();
    timers.push(setInterval(() => {
      for (const e of document.querySelectorAll('.remaining')) {
        const now = Number(e.dataset.now) + (Date.now() - skew);
        e.textContent = fromNow(Number(e.dataset.deadline), now);
      }
    }, 250));
  }
  async function pageId(my, id) {
    if (!id) {
      show(el('h1', { text: 'One ID' }), el('p', { text: 'Type an ID in “Find an ID” above: where it lives, its deadline and time remaining, payload, repeat, watch state and, during a split, its twin.' }));
      document.getElementById('find-id').focus();
      return;
    }
    document.getElementById('find-id').value = id;
    const r = await api('/api/get?id=' + encodeURIComponent(id));
    if (my !== seq) return;
    if (r.status !== 200) { show(...failure('ID ' + id, r)); return; }
    const g = r.body;
    freshness(g.read_ms);
    const found = g.found || g.deadline_ms !== null || 'payload' in g || (g.twin && g.twin.found);
    const kids = [el('h1', { id: 'id-title' }, 'ID ', el('span', { class: 'text', text: g.id })),
      el('p', { id: 'id-where' }, 'Shard ' + g.shard + ' of ' + g.shards + ' (hash ' + g.hash + '), state ' + g.state + '.' +
        (found ? '' : ' lapse holds nothing for this ID: never set, fired, or cancelled.'))];
    kids.push(place(g));
    if (g.twin) {
      kids.push(el('h2', { text: 'Its twin in old shard ' + g.twin.shard }),
        el('p', { id: 'id-twin', text: g.moved ? 'Written in its new shard since the split began: the old twin is stale (dropped, never fired).'
          : 'Not written in its new shard yet: the old twin is live.' }), place(g.twin));
    }
    const watch = el('p', { id: 'id-watch', text: 'Watch state: looking…' });
    kids.push(el('h2', { text: 'Watch state' }), watch);
    kids.push(actions(g.id));
    show(...kids);
    tickRemaining();
    // offline or not: the offline list filtered by this ID, read within the
    // server's time budget (it may stop short and say so)
    const w = await api('/api/offline?prefix=' + encodeURIComponent(id) + '&limit=1000');
    if (my !== seq) return;
    if (w.status !== 200) { watch.textContent = 'Watch state: not read (' + w.body.error + ')'; return; }
    const me = w.body.offline.find((x) => x.id === id);
    watch.textContent = me ? 'Offline since ' + iso(me.since_ms) + ' (' + dur(Date.now() - me.since_ms) + '): its timeout for ' + iso(me.deadline_ms) + ' fired and it has not been written since.'
      : w.body.truncated ? 'Not found offline in the shards read (' + w.body.shards_scanned + ' of ' + w.body.shards + ' shards: partial).'
        : 'Not offline (written since its last timeout, never timed out, or without recovery on).';
  }

  // ---- actions: cancel, set the deadline (writes on, with a token)
  function actions(id) {
    const msg = el('p', { id: 'action-result', role: 'status', 'aria-live': 'polite' });
    const token = el('input', { id: 'token', type: 'password', autocomplete: 'off', value: sessionStorage.getItem('lapse-token') || '' });
    const secs = el('input', { id: 'deadline-in', type: 'number', min: 0, step: 'any', value: 60, inputmode: 'decimal' });
    let armed = null;
    async function send(path, body, what) {
      sessionStorage.setItem('lapse-token', token.value);
      const headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
      if (token.value) headers.Authorization = 'Bearer ' + token.value;
      const r = await api(path, { method: 'POST', headers: headers, body: JSON.stringify(body) });
      msg.className = r.status === 200 ? 'good' : 'bad';
      msg.textContent = r.status === 200 ? 'Done: ' + what + ' (by ' + r.body.by + ').'
        : 'Refused (HTTP ' + r.status + '): ' + (r.body.error || '');
      if (r.status === 200) setTimeout(() => route(), 600);
    }
    // each action asks once more before it is sent
    function confirmFirst(name, go) {
      return (e) => {
        e.preventDefault();
        if (armed !== name) {
          armed = name;
          msg.className = '';
          msg.textContent = 'Press “' + (name === 'cancel' ? 'Cancel this ID' : 'Set deadline') + '” again to confirm.';
          return;
        }
        armed = null;
        go();
      };
    }
    return el('section', { class: 'actions', 'aria-labelledby': 'actions-h' },
      el('h2', { id: 'actions-h', text: 'Actions' }),
      el('p', { class: 'note', text: conf.writes ? 'Each action needs a token of the console\'s tokens file; it is applied in Redis and logged with the token\'s name.'
        : 'Writes are off on this console (console.writes = false): the server refuses every action.' }),
      el('form', { onsubmit: (e) => e.preventDefault() }, el('label', { for: 'token', text: 'Token' }), token),
      el('form', { id: 'cancel-form', onsubmit: confirmFirst('cancel', () => send('/api/cancel', { id: id }, 'cancelled ' + id)) },
        el('button', { type: 'submit', class: 'danger', id: 'cancel-btn', text: 'Cancel this ID' })),
      el('form', { id: 'deadline-form', onsubmit: confirmFirst('deadline', () => send('/api/deadline', { id: id, in_ms: Math.round(Number(secs.value) * 1000) }, 'deadline of ' + id + ' set ' + secs.value + ' s from now')) },
        el('label', { for: 'deadline-in', text: 'New deadline, seconds from now' }), secs,
        el('button', { type: 'submit', id: 'deadline-btn', text: 'Set deadline' })),
      msg);
  }

  // ---- routing: #/status, #/due, #/offline[?prefix=&cursor=], #/id/ID
  function route() {
    timers.forEach(clearInterval);
    timers = [];
    const my = ++seq;
    const h = location.hash.replace(/^#\/?/, '');
    const [path, query] = h.split('?');
    const [page, ...rest] = path.split('/');
    const name = ['status', 'due', 'offline', 'id'].includes(page) ? page : 'status';
    for (const a of document.querySelectorAll('nav a')) {
      if (a.dataset.page === name) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    document.title = { status: 'Namespace', due: 'Due times', offline: 'Offline', id: 'One ID' }[name] + ' · lapse ' + conf.ns;
    freshness(null);
    if (name === 'due') return pageDue(my);
    if (name === 'offline') return pageOffline(my, new URLSearchParams(query || ''));
    if (name === 'id') return pageId(my, rest.length ? decodeURIComponent(rest.join('/')) : '');
    return pageStatus(my);
  }

  document.getElementById('find').addEventListener('submit', (e) => {
    e.preventDefault();
    const id = document.getElementById('find-id').value;
    if (id) location.hash = '#/id/' + encodeURIComponent(id);
  });
  window.addEventListener('hashchange', () => { route(); main.focus(); });
  (async () => {
    const r = await api('/api/console');
    if (r.status === 200) conf = r.body;
    document.getElementById('ns').textContent = conf.ns;
    route();
  })();
})();
