// The Better Compute web console: plain JavaScript over the admin API (/v1/).
// Rules: the API key lives only in sessionStorage and the Authorization header (never in
// a URL, the DOM or a log); every value from the API is inserted with textContent, and
// charts are SVG elements built one by one (createElementNS), never markup from a string.
'use strict';

const KEY = 'bc.apiKey';
const TENANT = 'bc.tenant';
const PAGES = ['overview', 'nodes', 'node', 'join-requests', 'tokens', 'pools', 'sites', 'workflows',
  'events', 'audit', 'refusals', 'api-keys', 'server'];
const SVG = 'http://www.w3.org/2000/svg';
const $ = (id) => document.getElementById(id);

let tenant = null; // the tenant whose objects the pages show
let who = null; // GET /v1/whoami
let facts = null; // GET /v1/server (null: the server has no such route)
let pools = new Map(); // pool id -> name, for the tables
let sites = new Map(); // site id -> name

// What a key's role may do (GET /v1/whoami's role; absent: admin, the keys before roles).
// The server checks every route itself: hiding an action only spares a refused click.
const ROLE_CAN = {
  admin: ['write', 'keys'],
  operator: ['write'],
  viewer: [],
  metrics: [],
};
function role() { return (who && who.role) || 'admin'; }
function can(what) { return (ROLE_CAN[role()] || []).includes(what); }

function apiKey() { return sessionStorage.getItem(KEY); }

function status(msg, isError) {
  const s = $('status');
  s.textContent = msg || '';
  s.className = isError ? 'error' : '';
}

class ApiError extends Error {
  constructor(httpStatus, code, message) {
    super(message);
    this.httpStatus = httpStatus;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = { Authorization: 'Bearer ' + apiKey() };
  const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  let j = null;
  try { j = await r.json(); } catch (e) { j = null; }
  if (!r.ok) {
    const err = (j && j.error) || {};
    throw new ApiError(r.status, err.code || String(r.status), err.message || r.statusText);
  }
  return j;
}

function t(path) { return '/v1/tenants/' + encodeURIComponent(tenant) + path; }
function seg(id) { return encodeURIComponent(id); }

// ---- pages of a list: each follows the API's cursors (nextCursor, prevCursor), so any
// row of a list of any size is a filter or a few pages away ----
function view(limit) {
  return { limit, filters: {}, cursor: null, offset: 0, next: null, prev: null, shown: 0 };
}
const views = {
  nodes: view(100),
  'join-requests': view(100),
  tokens: view(100),
  workflows: view(100),
  events: view(100),
  audit: view(100),
};

function resetView(v) { Object.assign(v, { filters: {}, cursor: null, offset: 0, next: null, prev: null }); }

function pageQuery(v) {
  const q = new URLSearchParams({ limit: String(v.limit) });
  for (const [k, val] of Object.entries(v.filters)) if (val) q.set(k, val);
  if (v.cursor) q.set('cursor', v.cursor);
  return q.toString();
}

// after a page arrived: the buttons and "nodes 101 to 200"
function pageShown(name, v, j, n, noun) {
  v.next = j.nextCursor || null;
  v.prev = j.prevCursor || null;
  v.shown = n;
  $(name + '-prev').disabled = !v.prev;
  $(name + '-next').disabled = !v.next;
  $(name + '-range').textContent = n
    ? noun + ' ' + (v.offset + 1) + ' to ' + (v.offset + n) + (Object.values(v.filters).some(Boolean) ? ' that match' : '')
    : 'no ' + noun.replace(/s$/, '') + ' matches';
}

function wirePager(name) {
  const v = views[name];
  $(name + '-next').addEventListener('click', () => {
    if (!v.next) return;
    v.offset += v.shown;
    v.cursor = v.next;
    show(name, true);
  });
  $(name + '-prev').addEventListener('click', () => {
    if (!v.prev) return;
    v.offset = Math.max(0, v.offset - v.limit);
    v.cursor = v.prev;
    show(name, true);
  });
}

// ---- table building: text only ----
function cell(tr, value, cls) {
  const td = document.createElement('td');
  td.textContent = value === null || value === undefined ? '' : String(value);
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

function link(parent, text, href, cls) {
  const a = document.createElement('a');
  a.href = href;
  a.textContent = text;
  if (cls) a.className = cls;
  parent.appendChild(a);
  return a;
}

// a node id as a link to its page (the cell's text is the id)
function nodeCell(tr, id) {
  const td = cell(tr, '', 'id');
  if (id) link(td, id, '#node/' + id);
  return td;
}

// JSON data, folded: the cell's summary says what it holds, the whole is one click away
function dataCell(tr, data) {
  const td = cell(tr, '');
  if (data === null || data === undefined) return td;
  const keys = typeof data === 'object' ? Object.keys(data) : [];
  if (typeof data === 'object' && keys.length === 0) return td;
  const d = document.createElement('details');
  const s = document.createElement('summary');
  s.textContent = keys.length ? keys.join(', ') : 'data';
  const pre = document.createElement('pre');
  pre.textContent = JSON.stringify(data, null, 2);
  d.append(s, pre);
  td.appendChild(d);
  return td;
}

function button(td, label, onClick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  b.addEventListener('click', async () => {
    b.disabled = true;
    try { await onClick(); } catch (e) { failed(e); } finally { b.disabled = false; }
  });
  td.appendChild(b);
  return b;
}

// a button that POSTs to the tenant's PATH (after a confirmation when ask is given),
// says done, and loads the page again; none when the key's role may not change things
function action(td, label, page, path, done, ask, needs) {
  if (!can(needs || 'write')) return null;
  return button(td, label, async () => {
    if (ask && !confirm(ask)) return;
    await api('POST', t(path));
    status(done);
    await show(page, true);
  });
}

// a pool choice and an Enroll button for a discovered (ramdisk) node in no pool
function enroll(td, n, ps) {
  if (!can('write')) return;
  const sel = document.createElement('select');
  sel.className = 'enroll-pool';
  sel.setAttribute('aria-label', 'Pool to enroll ' + n.id + ' in');
  options(sel, ps);
  td.appendChild(sel);
  button(td, 'Enroll', async () => {
    if (!sel.value) { status('Choose the pool to enroll ' + n.id + ' in.', true); return; }
    await api('POST', t('/machines/enroll'), { nodeId: n.id, poolId: sel.value });
    status('Enrolled ' + n.id + ' in ' + poolName(sel.value) + ': deploy it with better-compute machines deploy --node ' + n.id + '.');
    await show('nodes', true);
  });
}

function fill(tbodyId, rows, columns, render) {
  const tb = $(tbodyId);
  tb.replaceChildren();
  if (rows.length === 0) {
    const tr = document.createElement('tr');
    const td = cell(tr, 'none', 'empty');
    td.colSpan = columns;
    tb.appendChild(tr);
    return;
  }
  for (const row of rows) {
    const tr = document.createElement('tr');
    render(tr, row);
    tb.appendChild(tr);
  }
}

// a two-column table of facts: [label, value] pairs
function facts2(tbodyId, pairs) {
  const tb = $(tbodyId);
  tb.replaceChildren();
  for (const [k, v, cls] of pairs) {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.textContent = k;
    tr.appendChild(th);
    cell(tr, v, cls);
    tb.appendChild(tr);
  }
}

function poolName(id) { return id ? (pools.get(id) || id) : ''; }

// "2026-12-03T10:00:00.000Z (in 12 min)": never "in 0 min", and past times say ago
function when(s) {
  if (!s) return '';
  const d = new Date(s);
  if (isNaN(d)) return s;
  const ms = d - Date.now();
  const a = Math.abs(ms);
  let rel;
  if (a < 60000) rel = 'less than a minute';
  else if (a < 120 * 60000) rel = Math.round(a / 60000) + ' min';
  else if (a < 72 * 3600000) rel = Math.round(a / 3600000) + ' h';
  else rel = Math.round(a / 86400000) + ' days';
  return s + (ms >= 0 ? ' (in ' + rel + ')' : ' (' + rel + ' ago)');
}

function past(s) { return Boolean(s) && new Date(s) <= Date.now(); }

// "30m", "1h", "24h", "7d" (or seconds: "90s") as seconds; null when not a duration
function durationSeconds(s) {
  const m = /^\s*(\d{1,6})\s*([smhd])\s*$/.exec(s || '');
  if (!m) return null;
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2]];
}

function failed(e) {
  if (e instanceof ApiError && e.httpStatus === 401) {
    signOut('The server refused the API key (' + e.message + '): sign in again.');
    return;
  }
  if (e instanceof ApiError && e.httpStatus === 403) {
    status('This key (role ' + role() + ') may not do that: ' + e.message, true);
    return;
  }
  status((e && e.message) || String(e), true);
}

// A join request's claims as "mac=… productUuid=… serial=…" (text, never markup).
function claimsText(c) {
  if (!c || typeof c !== 'object') return '';
  return ['mac', 'productUuid', 'serial']
    .filter((k) => typeof c[k] === 'string' && c[k] !== '')
    .map((k) => k + '=' + c[k])
    .join(' ');
}

// ---- what a node's state and certificate say, a revoked identity included ----
function nodeState(n) {
  if (n.state !== 'retired' && n.identityRevokedAt) return 'identity revoked';
  return n.state;
}

function nodeStateClass(n) { return 'state-' + nodeState(n).replace(/ /g, '-'); }

function certText(n) {
  if (n.certificate) return when(n.certificate.notAfter);
  if (n.state === 'retired') return 'revoked (retired)';
  if (n.identityRevokedAt) return 'revoked ' + n.identityRevokedAt;
  return 'no current certificate';
}

function tokenState(k) {
  if (k.revokedAt) return 'revoked';
  if (k.usesLeft === 0) return 'used up';
  if (past(k.expiresAt)) return 'expired';
  return 'active';
}

function keyState(k) {
  if (k.revokedAt) return 'revoked';
  if (past(k.expiresAt)) return 'expired';
  return 'active';
}

// ---- charts: SVG built element by element ----
function svgEl(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// bars: [{label, value}], one per bucket, left to right
function barChart(boxId, bars, cls) {
  const W = 480, H = 120, top = 12, bottom = 18;
  const max = Math.max(1, ...bars.map((b) => b.value));
  const svg = svgEl('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
  const bw = W / bars.length;
  svg.appendChild(svgEl('line', { x1: 0, y1: H - bottom, x2: W, y2: H - bottom, class: 'axis' }));
  bars.forEach((b, i) => {
    const h = ((H - top - bottom) * b.value) / max;
    const r = svgEl('rect', { x: i * bw + 2, y: H - bottom - h, width: Math.max(1, bw - 4), height: h, class: cls });
    r.appendChild(svgEl('title', {}, b.label + ': ' + b.value));
    r.dataset.value = String(b.value);
    svg.appendChild(r);
    if (b.value > 0) svg.appendChild(svgEl('text', { x: i * bw + bw / 2, y: H - bottom - h - 2, 'text-anchor': 'middle' }, b.value));
    if (i % 3 === 0) svg.appendChild(svgEl('text', { x: i * bw + 2, y: H - 4 }, b.label));
  });
  svg.appendChild(svgEl('text', { x: 4, y: 10 }, 'max ' + max + ' an hour'));
  $(boxId).replaceChildren(svg);
}

// lines: two series of numbers sampled at the same times
function lineChart(boxId, a, b, labels) {
  const W = 480, H = 120, pad = 14;
  const max = Math.max(1, ...a, ...b);
  const svg = svgEl('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
  svg.appendChild(svgEl('line', { x1: 0, y1: H - pad, x2: W, y2: H - pad, class: 'axis' }));
  const pts = (s) => s.map((v, i) => (s.length < 2 ? 0 : (i * W) / (s.length - 1)) + ',' + (H - pad - ((H - 2 * pad) * v) / max)).join(' ');
  svg.appendChild(svgEl('polyline', { points: pts(a), class: 'line-a' }));
  svg.appendChild(svgEl('polyline', { points: pts(b), class: 'line-b' }));
  svg.appendChild(svgEl('text', { x: 4, y: 10 }, labels));
  svg.appendChild(svgEl('text', { x: W - 4, y: 10, 'text-anchor': 'end' }, 'max ' + max));
  $(boxId).replaceChildren(svg);
}

// events of these types in the last `hours` hours, counted per hour from the events
// list, at most `pages` pages of 1000 (the note says when there were more)
async function eventsPerHour(types, hours, pages) {
  const now = Date.now();
  const start = now - hours * 3600000;
  const counts = new Array(hours).fill(0);
  let more = false;
  for (const ty of types) {
    let cursor = null;
    for (let p = 0; p < pages; p++) {
      const q = new URLSearchParams({ type: ty, since: hours + 'h', limit: '1000' });
      if (cursor) q.set('cursor', cursor);
      const j = await api('GET', t('/events?' + q.toString()));
      for (const e of j.events) {
        const i = Math.floor((new Date(e.createdAt) - start) / 3600000);
        if (i >= 0 && i < hours) counts[i]++;
        else if (i >= hours) counts[hours - 1]++;
      }
      cursor = j.nextCursor;
      if (!cursor) break;
      if (p === pages - 1) more = true;
    }
  }
  const bars = counts.map((v, i) => {
    const h = new Date(start + i * 3600000);
    return { label: String(h.getUTCHours()).padStart(2, '0') + ':00', value: v };
  });
  return { bars, more, total: counts.reduce((x, y) => x + y, 0) };
}

// /metrics samples the page keeps while it is open: joins (joined, reclaimed) and
// refusals, server-wide, per interval. Only a key the server lets read /metrics.
const live = { timer: null, samples: [], off: '' };
const LIVE_EVERY_MS = 15000;
const LIVE_KEEP = 240; // an hour of samples

function metricSum(text, name, filter) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
    if (filter && !filter(line)) continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) sum += v;
  }
  return sum;
}

async function sampleMetrics() {
  const r = await fetch('/metrics', { headers: { Authorization: 'Bearer ' + apiKey() }, cache: 'no-store', credentials: 'omit', redirect: 'error' });
  if (!r.ok) {
    // a key that may not read /metrics is not asked again (each refusal counts as a failed key)
    live.off = 'This key cannot read /metrics (' + r.status + '): a root admin or metrics key can.';
    stopLive();
    return;
  }
  const text = await r.text();
  live.samples.push({
    at: Date.now(),
    joins: metricSum(text, 'bc_join_outcomes_total', (l) => /outcome="(joined|reclaimed)"/.test(l)),
    refusals: metricSum(text, 'bc_join_refusals_total'),
  });
  if (live.samples.length > LIVE_KEEP) live.samples.shift();
}

function startLive() {
  if (live.timer || live.off) return;
  if (!who || who.tenantId !== 'root' || !['admin', 'metrics', 'operator', 'viewer'].includes(role())) {
    live.off = 'Only a key of the root tenant reads /metrics; this page shows the events instead.';
    return;
  }
  live.timer = setInterval(() => { sampleMetrics().then(drawLive).catch(() => {}); }, LIVE_EVERY_MS);
}

function stopLive() {
  if (live.timer) clearInterval(live.timer);
  live.timer = null;
}

function drawLive() {
  if (!$('ov-live-chart')) return;
  const s = live.samples;
  if (live.off) {
    $('ov-live-chart').replaceChildren();
    $('ov-live-note').textContent = live.off;
    return;
  }
  const d = (k) => s.slice(1).map((x, i) => Math.max(0, x[k] - s[i][k]));
  lineChart('ov-live-chart', d('joins'), d('refusals'), 'joins (blue), refusals (red) per ' + LIVE_EVERY_MS / 1000 + ' s');
  $('ov-live-note').textContent = s.length < 2
    ? 'Sampling /metrics every ' + LIVE_EVERY_MS / 1000 + ' s while this page is open (server-wide counts).'
    : s.length + ' samples since ' + new Date(s[0].at).toISOString() + ' (server-wide).';
}

// ---- pages ----
async function loadPools() {
  const j = await api('GET', t('/pools'));
  pools = new Map(j.pools.map((p) => [p.id, p.name]));
  return j.pools;
}

async function loadSites() {
  const j = await api('GET', t('/sites'));
  sites = new Map(j.sites.map((s) => [s.id, s.name]));
  return j.sites;
}

// a count table: one row per value, each a link to the nodes that have it
function countTable(tbodyId, obj, label, filterKey) {
  const rows = Object.entries(obj || {}).sort((a, b) => b[1] - a[1]);
  fill(tbodyId, rows, 2, (tr, [k, n]) => {
    tr.dataset.key = k;
    const td = cell(tr, '');
    const a = link(td, label(k), '#nodes');
    a.addEventListener('click', () => {
      resetView(views.nodes);
      views.nodes.filters[filterKey] = k === 'none' ? '' : k;
      syncNodesForm();
    });
    cell(tr, n, 'n');
  });
}

const loaders = {
  overview: async () => {
    await loadPools();
    const [c, pend, exp] = await Promise.all([
      api('GET', t('/node-counts')),
      api('GET', t('/join-requests?state=pending&limit=1000')),
      api('GET', t('/nodes?expiringWithin=7d&limit=10')),
    ]);
    $('ov-total').textContent = c.total + (c.total === 1 ? ' node' : ' nodes');
    $('ov-total').dataset.total = String(c.total);
    countTable('ov-state', c.byState, (k) => k, 'state');
    countTable('ov-role', c.byRole, (k) => k, 'role');
    countTable('ov-attestor', c.byAttestor, (k) => k, 'attestor');
    countTable('ov-pool', c.byPool, (k) => (k === 'none' ? '(no pool)' : poolName(k)), 'pool');
    const cs = c.certificates || {};
    facts2('ov-certs', [
      ['expired', cs.expired],
      ['expire within a day', cs.expiringWithin1d],
      ['expire within 7 days', cs.expiringWithin7d],
      ['none current (not retired)', cs.none, cs.none ? 'cert-none' : ''],
    ]);
    $('ov-pending').textContent = String(pend.joinRequests.length) + (pend.nextCursor ? '+' : '');
    fill('ov-expiring-rows', exp.nodes, 4, (tr, n) => {
      nodeCell(tr, n.id);
      cell(tr, n.hostname);
      cell(tr, nodeState(n), nodeStateClass(n));
      cell(tr, certText(n));
    });
    const [joins, refusals] = await Promise.all([
      eventsPerHour(['node.joined'], 12, 5),
      eventsPerHour(['security.join.refused', 'security.renew.refused'], 12, 5),
    ]);
    barChart('ov-joins-chart', joins.bars, 'bar-joins');
    $('ov-joins-note').textContent = joins.total + ' node.joined events' + (joins.more ? ' (the first 5000 of each type counted)' : '') + ', hours in UTC.';
    barChart('ov-refusals-chart', refusals.bars, 'bar-refusals');
    $('ov-refusals-note').textContent = refusals.total + ' join and renewal refusals' + (refusals.more ? ' (the first 5000 of each type counted)' : '') + ': see Refusals for the reasons.';
    startLive();
    if (live.timer && live.samples.length === 0) await sampleMetrics().catch(() => {});
    drawLive();
  },
  'join-requests': async () => {
    await loadPools();
    const v = views['join-requests'];
    v.filters = { state: 'pending' };
    const j = await api('GET', t('/join-requests?' + pageQuery(v)));
    pageShown('join-requests', v, j, j.joinRequests.length, 'requests');
    fill('join-requests-rows', j.joinRequests, 11, (tr, r) => {
      cell(tr, r.id, 'id');
      cell(tr, r.attestor);
      cell(tr, poolName(r.poolId));
      cell(tr, r.siteId, 'id');
      cell(tr, r.requestKey, 'mono');
      cell(tr, r.detail && r.detail.ekIssuer);
      // what an approval admits: the request is bound to these claims and this CSR
      cell(tr, claimsText(r.claims), 'mono');
      cell(tr, r.csrSha256, 'mono');
      cell(tr, r.createdAt);
      cell(tr, when(r.expiresAt));
      const td = cell(tr, '');
      const path = '/join-requests/' + seg(r.id);
      action(td, 'Approve', 'join-requests', path + '/approve', 'Approved ' + r.id + ': the machine joins at its next attempt.');
      action(td, 'Deny', 'join-requests', path + '/deny', 'Denied ' + r.id + '.',
        'Deny join request ' + r.id + '? The machine will be refused.');
    });
  },
  nodes: async () => {
    const [ps, ss] = await Promise.all([loadPools(), loadSites()]);
    options($('nodes-pool'), ps, 'any');
    options($('nodes-site'), ss, 'any');
    attestorOptions();
    syncNodesForm();
    // counts from the store, one page of nodes from the server's filters and cursor
    const v = views.nodes;
    const [counts, j] = await Promise.all([api('GET', t('/node-counts')),
      api('GET', t('/nodes?' + pageQuery(v)))]);
    const by = Object.entries(counts.byState || {}).map(([s, n]) => n + ' ' + s).join(', ');
    $('nodes-count').textContent = counts.total + ' nodes in this tenant' + (by ? ' (' + by + ')' : '') + '.';
    pageShown('nodes', v, j, j.nodes.length, 'nodes');
    fill('nodes-rows', j.nodes, 11, (tr, n) => {
      tr.dataset.node = n.id;
      nodeCell(tr, n.id);
      cell(tr, n.hostname);
      cell(tr, poolName(n.poolId));
      cell(tr, nodeState(n), nodeStateClass(n));
      cell(tr, n.attestor);
      cell(tr, n.nodeKey);
      cell(tr, certText(n), n.certificate ? '' : 'cert-none');
      cell(tr, n.joinedAt);
      cell(tr, n.role);
      // the command kinds a dispatcher must hold a ramdisk node to (none for others)
      cell(tr, (n.allowedKinds || []).join(' '), 'mono kinds');
      const td = cell(tr, '');
      nodeActions(td, n, 'nodes', ps);
    });
  },
  node: async (id) => {
    if (!id) { location.hash = '#nodes'; return; }
    $('node-title').textContent = id;
    await loadPools();
    const [n, certs, inv, evs] = await Promise.all([
      api('GET', t('/nodes/' + seg(id))),
      api('GET', t('/nodes/' + seg(id) + '/certificates')),
      api('GET', t('/nodes/' + seg(id) + '/inventory')),
      api('GET', t('/events?node=' + seg(id) + '&limit=50')),
    ]);
    const na = $('node-actions');
    na.replaceChildren();
    nodeActions(na, n, 'node/' + id, null);
    facts2('node-facts', [
      ['Id', n.id, 'id'],
      ['State', nodeState(n), nodeStateClass(n)],
      ['Hostname', n.hostname],
      ['Role', n.role],
      ['Pool', n.poolName ? n.poolName + ' (' + n.poolId + ')' : ''],
      ['Site', n.siteName ? n.siteName + ' (' + n.siteId + ')' : ''],
      ['Attestor', n.attestor],
      ['Node key', n.nodeKey],
      ['Identity generation', n.generation],
      ['Certificate expires', certText(n), n.certificate ? '' : 'cert-none'],
      ['Current certificate', n.certificate ? n.certificate.serial : '', 'mono'],
      ['Identity revoked', n.identityRevokedAt],
      ['Product UUID', n.productUuid, 'mono'],
      ['Serial', n.serial, 'mono'],
      ['MACs', (n.macs || []).join(' '), 'mono'],
      ['Architecture', n.arch],
      ['Agent version', n.agentVersion],
      ['Allowed kinds', (n.allowedKinds || []).join(' '), 'mono'],
      ['Joined', n.joinedAt],
      ['Updated', n.updatedAt],
    ]);
    $('node-certs-note').textContent = certs.certificates.length + ' certificate(s), the latest to expire first' +
      (certs.certificates.length >= certs.max ? ' (the latest ' + certs.max + ')' : '') +
      (certs.currentSerial ? '; the current one is ' + certs.currentSerial : '; none is current') + '.';
    fill('node-certs-rows', certs.certificates, 7, (tr, c) => {
      cell(tr, c.serial, 'mono');
      cell(tr, c.generation);
      let st = 'issued';
      if (c.serial === certs.currentSerial) st = 'current';
      else if (c.revokedAt) st = 'revoked ' + c.revokedAt;
      else if (past(c.notAfter)) st = 'expired';
      else if (c.supersededAt) st = 'superseded';
      else if (c.usedAt) st = 'renewed';
      cell(tr, st);
      cell(tr, c.notBefore);
      cell(tr, when(c.notAfter));
      cell(tr, c.predecessor, 'mono');
      cell(tr, c.role);
    });
    fill('node-bindings-rows', certs.bindings || [], 3, (tr, b) => {
      cell(tr, b.kind);
      cell(tr, b.key, 'mono');
      cell(tr, b.createdAt);
    });
    fill('node-inventory-rows', (inv.inventory || []).slice().reverse(), 2, (tr, i) => {
      cell(tr, i.takenAt);
      dataCell(tr, i.claims);
    });
    fill('node-events-rows', evs.events, 4, (tr, e) => {
      cell(tr, e.createdAt);
      cell(tr, e.type);
      cell(tr, e.data && e.data.reason, 'reason');
      dataCell(tr, e.data);
    });
    $('node-events-all').onclick = () => { resetView(views.events); views.events.filters.node = id; syncFilterForms(); };
    $('node-audit-all').onclick = () => { resetView(views.audit); views.audit.filters.node = id; syncFilterForms(); };
    // workflows name their node in their data; the list has no node filter, so the
    // newest pages are read (the note says how far)
    const wfs = [];
    let cursor = null, read = 0;
    for (let p = 0; p < 5; p++) {
      const q = new URLSearchParams({ limit: '1000' });
      if (cursor) q.set('cursor', cursor);
      const j = await api('GET', t('/workflows?' + q.toString()));
      read += j.workflows.length;
      wfs.push(...j.workflows.filter((w) => w.nodeId === id ||
        (w.data && w.data.bootEntry && w.data.bootEntry.nodeId === id)));
      cursor = j.nextCursor;
      if (!cursor) break;
    }
    fill('node-workflows-rows', wfs, 5, (tr, w) => {
      cell(tr, w.id, 'id');
      cell(tr, w.kind);
      cell(tr, w.state);
      cell(tr, w.createdAt);
      cell(tr, w.updatedAt);
    });
    $('node-workflows-note').textContent = 'Of ' + read + ' workflows read' + (cursor ? ' (the first 5000; more exist)' : '') + '.';
  },
  tokens: async () => {
    const [ps, ss] = await Promise.all([loadPools(), loadSites()]);
    options($('token-pool'), ps, '(choose a pool)');
    options($('token-site'), ss);
    // a node token needs a pool: the first one is chosen unless the operator chose
    if (!$('token-pool').value && ps.length) $('token-pool').value = ps[0].id;
    tokenRoleChanged();
    const v = views.tokens;
    const j = await api('GET', t('/tokens?' + pageQuery(v)));
    pageShown('tokens', v, j, j.tokens.length, 'tokens');
    fill('tokens-rows', j.tokens, 9, (tr, k) => {
      const st = tokenState(k);
      cell(tr, k.id, 'id');
      cell(tr, k.role);
      cell(tr, poolName(k.poolId));
      cell(tr, k.siteName || k.siteId);
      cell(tr, k.usesLeft + ' of ' + k.usesTotal);
      cell(tr, when(k.expiresAt));
      cell(tr, st + (k.revokedAt ? ' ' + k.revokedAt : ''), 'tstate-' + st.replace(/ /g, '-'));
      cell(tr, k.description);
      const td = cell(tr, '');
      // a used-up, expired or revoked token admits nothing: nothing to revoke
      if (st === 'active') {
        action(td, 'Revoke', 'tokens', '/tokens/' + seg(k.id) + '/revoke', 'Revoked ' + k.id + '.');
      }
    });
  },
  pools: async () => {
    const [ps, counts] = await Promise.all([loadPools(), api('GET', t('/node-counts'))]);
    const byPool = counts.byPool || {};
    fill('pools-rows', ps, 6, (tr, p) => {
      cell(tr, p.id, 'id');
      cell(tr, p.name);
      const td = cell(tr, '');
      const pre = document.createElement('pre');
      pre.textContent = JSON.stringify(p.policy, null, 2);
      td.appendChild(pre);
      const nc = cell(tr, '');
      const a = link(nc, String(byPool[p.id] || 0), '#nodes');
      a.addEventListener('click', () => { resetView(views.nodes); views.nodes.filters.pool = p.id; syncNodesForm(); });
      cell(tr, p.createdAt);
      cell(tr, p.updatedAt);
    });
  },
  sites: async () => {
    const all = await loadSites();
    // each site's boot lease is in its own answer (GET .../sites/{id}); the first 200
    const shown = all.slice(0, 200);
    const full = await Promise.all(shown.map((s) => api('GET', t('/sites/' + seg(s.id)))));
    fill('sites-rows', full, 7, (tr, s) => {
      const l = s.lease || {};
      cell(tr, s.id, 'id');
      cell(tr, s.name);
      const h = cell(tr, l.holder ? '' : 'none', 'id');
      if (l.holder) link(h, l.holder, '#node/' + l.holder);
      cell(tr, l.epoch);
      cell(tr, l.expiresAt);
      cell(tr, s.createdAt);
      const td = cell(tr, '');
      if (l.holder) {
        action(td, 'Release lease', 'sites', '/sites/' + seg(s.id) + '/release-lease', 'Released the boot lease of ' + s.name + '.',
          'Release the boot lease of ' + s.name + '? Its holder stops answering boots until a site node takes it again.');
      }
    });
  },
  workflows: async () => {
    const v = views.workflows;
    const j = await api('GET', t('/workflows?' + pageQuery(v)));
    pageShown('workflows', v, j, j.workflows.length, 'workflows');
    fill('workflows-rows', j.workflows, 8, (tr, w) => {
      cell(tr, w.id, 'id');
      cell(tr, w.kind);
      cell(tr, w.state);
      nodeCell(tr, w.nodeId || (w.data && w.data.bootEntry && w.data.bootEntry.nodeId));
      dataCell(tr, w.data);
      cell(tr, w.createdAt);
      cell(tr, w.updatedAt);
      const td = cell(tr, '');
      if (w.state === 'running') {
        action(td, 'Cancel', 'workflows', '/workflows/' + seg(w.id) + '/cancel', 'Cancelled ' + w.id + '.',
          'Cancel workflow ' + w.id + '?');
      }
    });
  },
  events: async () => {
    const v = views.events;
    const j = await api('GET', t('/events?' + pageQuery(v)));
    pageShown('events', v, j, j.events.length, 'events');
    fill('events-rows', j.events, 5, (tr, e) => {
      cell(tr, e.createdAt);
      cell(tr, e.type);
      if (/^node_/.test(e.subject || '')) nodeCell(tr, e.subject);
      else cell(tr, e.subject, 'id');
      cell(tr, e.data && e.data.reason, 'reason');
      dataCell(tr, e.data);
    });
  },
  audit: async () => {
    const v = views.audit;
    const j = await api('GET', t('/audit?' + pageQuery(v)));
    pageShown('audit', v, j, j.audit.length, 'rows');
    fill('audit-rows', j.audit, 6, (tr, a) => {
      cell(tr, a.createdAt);
      cell(tr, a.actor, 'id');
      cell(tr, a.action);
      if (/^node_/.test(a.subject || '')) nodeCell(tr, a.subject);
      else cell(tr, a.subject, 'id');
      cell(tr, a.data && a.data.reason, 'reason');
      dataCell(tr, a.data);
    });
  },
  refusals: async () => {
    const types = ['security.join.refused', 'security.renew.refused'];
    const lists = await Promise.all(types.map((ty) =>
      api('GET', t('/events?limit=200&type=' + encodeURIComponent(ty)))));
    const evs = lists.flatMap((l) => l.events);
    evs.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
    fill('refusals-rows', evs, 6, (tr, e) => {
      const d = e.data || {};
      cell(tr, e.createdAt);
      cell(tr, e.type);
      cell(tr, d.attestor);
      cell(tr, d.reason, 'reason');
      const nid = d.nodeId || e.subject;
      if (/^node_/.test(nid || '')) nodeCell(tr, nid);
      else cell(tr, nid, 'id');
      cell(tr, d.tokenId, 'id');
    });
  },
  'api-keys': async () => {
    const j = await api('GET', t('/api-keys'));
    fill('api-keys-rows', j.apiKeys, 7, (tr, k) => {
      const st = keyState(k);
      cell(tr, k.id + (who && k.id === who.keyId ? ' (this key)' : ''), 'id');
      cell(tr, k.name);
      cell(tr, k.createdAt);
      cell(tr, k.expiresAt ? when(k.expiresAt) : 'never');
      cell(tr, k.lastUsedAt);
      cell(tr, st + (k.revokedAt ? ' ' + k.revokedAt : ''), 'kstate-' + st);
      const td = cell(tr, '');
      if (st === 'active') {
        action(td, 'Revoke', 'api-keys', '/api-keys/' + seg(k.id) + '/revoke', 'Revoked ' + k.id + '.',
          'Revoke API key ' + k.name + ' (' + k.id + ')?' + (who && k.id === who.keyId ? ' It is the key this console signed in with.' : ''), 'keys');
      }
    });
  },
  server: async () => {
    const [tn, f] = await Promise.all([api('GET', '/v1/tenants'), serverFacts()]);
    facts2('server-rows', [
      ['Version', f ? f.version : '(this server has no GET /v1/server)'],
      ['Trust domain', f && f.trustDomain, 'id'],
      ['Public URL', f && f.publicUrl, 'id'],
      ['Attestors', f ? f.attestors.join(' ') : ''],
      ['Signed in as', who.keyId, 'id'],
      ["Key's tenant", who.tenantId, 'id'],
      ["Key's role", role() + (who.role ? '' : ' (the server names no role: every route)')],
    ]);
    fill('tenants-rows', tn.tenants, 3, (tr, x) => {
      cell(tr, x.id, 'id');
      cell(tr, x.name);
      cell(tr, x.createdAt);
    });
  },
};

// a node's actions (the nodes list's row, or its own page)
function nodeActions(td, n, page, ps) {
  const path = '/nodes/' + seg(n.id);
  // a discovered machine becomes a machine of a pool, so that it can be deployed
  if (ps && n.role === 'ramdisk' && !n.poolId && n.state !== 'retired') enroll(td, n, ps);
  if (n.state !== 'cordoned' && n.state !== 'retired') action(td, 'Cordon', page, path + '/cordon', 'Cordoned ' + n.id + '.');
  if (n.state === 'cordoned') action(td, 'Uncordon', page, path + '/uncordon', 'Uncordoned ' + n.id + '.');
  if (page !== 'nodes' && n.state !== 'retired' && !n.identityRevokedAt) {
    action(td, 'Revoke identity', page, path + '/revoke-identity', 'Revoked the identity of ' + n.id + '.',
      'Revoke the identity of ' + n.id + '? Its certificates are revoked; it must join again.');
  }
  if (n.state !== 'retired') {
    action(td, 'Retire', page, path + '/retire', 'Retired ' + n.id + '.',
      'Retire ' + n.id + '? Its certificates are revoked.');
  }
}

async function serverFacts() {
  if (facts) return facts;
  try {
    facts = await api('GET', '/v1/server');
  } catch (e) {
    if (!(e instanceof ApiError) || e.httpStatus !== 404) throw e;
    facts = null;
  }
  return facts;
}

function attestorOptions() {
  const sel = $('nodes-attestor');
  if (sel.options.length) return;
  const ids = new Set(['join-token', ...((facts && facts.attestors) || [])]);
  options(sel, [...ids].map((id) => ({ id, name: id })), 'any', true);
}

// the nodes filter form shows the view's filters (after a count's link or a search)
const NODE_FILTERS = { state: 'nodes-state', role: 'nodes-role', pool: 'nodes-pool', site: 'nodes-site',
  attestor: 'nodes-attestor', hostname: 'nodes-hostname', productUuid: 'nodes-product', expiringWithin: 'nodes-expiring' };
function syncNodesForm() {
  const f = views.nodes.filters;
  for (const [k, id] of Object.entries(NODE_FILTERS)) {
    const el = $(id);
    if (el.tagName === 'SELECT' && f[k] && ![...el.options].some((o) => o.value === f[k])) {
      const o = document.createElement('option');
      o.value = f[k];
      o.textContent = f[k];
      el.appendChild(o);
    }
    el.value = f[k] || '';
  }
}

function syncFilterForms() {
  const e = views.events.filters, a = views.audit.filters;
  $('events-type').value = e.type || '';
  $('events-node').value = e.node || '';
  $('events-since').value = e.since || '';
  $('audit-action').value = a.action || '';
  $('audit-node').value = a.node || '';
  $('audit-since').value = a.since || '';
}

function options(select, items, noneLabel, bare) {
  const keep = select.value;
  select.replaceChildren();
  const none = document.createElement('option');
  none.value = '';
  none.textContent = noneLabel || '(none)';
  select.appendChild(none);
  for (const it of items) {
    const o = document.createElement('option');
    o.value = it.id;
    o.textContent = bare ? it.name : it.name + ' (' + it.id + ')';
    select.appendChild(o);
  }
  if (keep) select.value = keep;
}

// the page of a hash: "#nodes", "#node/node_..."
function route(hash) {
  const h = (hash || '').replace(/^#/, '');
  const i = h.indexOf('/');
  const name = i < 0 ? h : h.slice(0, i);
  const arg = i < 0 ? '' : decodeURIComponent(h.slice(i + 1));
  return PAGES.includes(name) ? [name, arg] : ['overview', ''];
}

async function show(page, keepStatus) {
  const [name, arg] = route(page);
  for (const p of ['sign-in', ...PAGES]) $('page-' + p).hidden = p !== name;
  const navName = name === 'node' ? 'nodes' : name;
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('current', a.dataset.page === navName);
  for (const el of document.querySelectorAll('[data-needs]')) el.hidden = !can(el.dataset.needs);
  if (!keepStatus) status('');
  document.body.dataset.loaded = '';
  try {
    await loaders[name](arg);
  } catch (e) {
    failed(e);
  }
  if (apiKey()) document.body.dataset.loaded = name;
}

// ---- sign in and out ----
function signedOutView(msg) {
  $('nav').hidden = true;
  $('who').hidden = true;
  $('search-form').hidden = true;
  for (const p of PAGES) $('page-' + p).hidden = true;
  $('page-sign-in').hidden = false;
  document.body.dataset.loaded = 'sign-in';
  status(msg || '', Boolean(msg));
}

function signOut(msg) {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(TENANT);
  tenant = null;
  who = null;
  facts = null;
  stopLive();
  Object.assign(live, { samples: [], off: '' });
  for (const v of Object.values(views)) resetView(v);
  for (const tb of document.querySelectorAll('tbody')) tb.replaceChildren();
  signedOutView(msg);
}

async function signedIn() {
  who = await api('GET', '/v1/whoami');
  const tenants = (await api('GET', '/v1/tenants')).tenants;
  await serverFacts().catch(() => null);
  const sel = $('tenant');
  sel.replaceChildren();
  for (const tn of tenants) {
    const o = document.createElement('option');
    o.value = tn.id;
    o.textContent = tn.name + ' (' + tn.id + ')';
    sel.appendChild(o);
  }
  const saved = sessionStorage.getItem(TENANT);
  tenant = tenants.some((x) => x.id === saved) ? saved : who.tenantId;
  sel.value = tenant;
  sel.disabled = tenants.length < 2;
  $('key-id').textContent = 'key ' + who.keyId;
  $('key-role').textContent = role();
  $('key-role').title = can('keys') ? 'may change everything' : can('write') ? 'may change everything but API keys' : 'read only: actions are hidden';
  $('nav').hidden = false;
  $('who').hidden = false;
  $('search-form').hidden = false;
  await show(location.hash);
}

function tokenRoleChanged() {
  const node = $('token-role').value === 'node';
  $('token-pool').disabled = !node;
}

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

document.addEventListener('DOMContentLoaded', () => {
  $('sign-in-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const field = $('api-key');
    const k = field.value.trim();
    field.value = '';
    if (!/^bck_[A-Za-z0-9_-]+$/.test(k)) {
      status('That is not an API key: it starts with bck_ (better-compute init printed one).', true);
      return;
    }
    sessionStorage.setItem(KEY, k);
    try {
      await signedIn();
    } catch (e) {
      if (e instanceof ApiError && e.httpStatus === 401) signOut('The server refused that API key.');
      // a metrics key reads /metrics and nothing else: no page of the console is its
      else if (e instanceof ApiError && e.httpStatus === 403) signOut('This key may not read the admin API (' + e.message + '): the console needs an admin, operator or viewer key.');
      else failed(e);
    }
  });
  $('sign-out').addEventListener('click', () => signOut('Signed out.'));
  $('tenant').addEventListener('change', (ev) => {
    tenant = ev.target.value;
    sessionStorage.setItem(TENANT, tenant);
    // another tenant's lists: from their first page, unfiltered
    for (const v of Object.values(views)) resetView(v);
    for (const id of Object.values(NODE_FILTERS)) $(id).value = '';
    syncFilterForms();
    const [name] = route(location.hash);
    show(name === 'node' ? 'nodes' : location.hash);
  });
  // the current page's link loads it again
  for (const a of document.querySelectorAll('nav a')) {
    a.addEventListener('click', (ev) => {
      if (location.hash === '#' + a.dataset.page) {
        ev.preventDefault();
        show(a.dataset.page);
      }
    });
  }
  window.addEventListener('hashchange', () => { if (apiKey()) show(location.hash); });
  // search: a node id opens its page; a UUID is a product UUID; anything else a hostname
  $('search-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = $('search').value.trim();
    if (!q) return;
    if (/^node_[a-z0-9_-]+$/.test(q)) {
      location.hash = '#node/' + q;
      return;
    }
    resetView(views.nodes);
    if (UUID.test(q)) views.nodes.filters.productUuid = q.toLowerCase();
    else views.nodes.filters.hostname = q;
    syncNodesForm();
    if (location.hash === '#nodes') show('nodes');
    else location.hash = '#nodes';
  });
  $('token-role').addEventListener('change', tokenRoleChanged);
  $('token-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const role = $('token-role').value;
    const ttl = durationSeconds($('token-ttl').value);
    const uses = Number($('token-uses').value);
    if (ttl === null || ttl < 60 || ttl > 365 * 86400) {
      status('Valid for: give a duration such as 30m, 1h, 24h or 7d (1 minute to 365 days).', true);
      return;
    }
    if (!Number.isInteger(uses) || uses < 1 || uses > 10000) {
      status('Uses: give a whole number from 1 to 10000.', true);
      return;
    }
    if (role === 'node' && !$('token-pool').value) {
      status('A node token joins into a pool: choose one (create one with better-compute pools create NAME).', true);
      return;
    }
    if (role === 'site' && !$('token-site').value) {
      status("A site token is for one site's boot server: choose the site (create one with better-compute sites create NAME).", true);
      return;
    }
    const body = { role, uses, ttlSeconds: ttl };
    if (role === 'node') body.poolId = $('token-pool').value;
    if ($('token-site').value) body.siteId = $('token-site').value;
    if ($('token-description').value) body.description = $('token-description').value;
    try {
      const j = await api('POST', t('/tokens'), body);
      $('token-secret').textContent = j.secret;
      $('token-secret-box').hidden = false;
      status('Created ' + j.token.id + '.');
      await show('tokens', true);
    } catch (e) {
      failed(e);
    }
  });
  $('key-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const name = $('key-name').value.trim();
    const ttlText = $('key-ttl').value.trim();
    const body = { name };
    if (!name) { status('Name the key (who or what uses it).', true); return; }
    if (ttlText) {
      const ttl = durationSeconds(ttlText);
      if (ttl === null || ttl < 60 || ttl > 3650 * 86400) {
        status('Valid for: a duration such as 24h, 7d or 365d (1 minute to 3650 days), or empty: never expires.', true);
        return;
      }
      body.ttlSeconds = ttl;
    }
    try {
      const j = await api('POST', t('/api-keys'), body);
      $('key-secret').textContent = j.key;
      $('key-secret-box').hidden = false;
      $('key-name').value = '';
      status('Created ' + j.id + '.');
      await show('api-keys', true);
    } catch (e) {
      failed(e);
    }
  });
  $('key-secret-done').addEventListener('click', () => {
    $('key-secret').textContent = '';
    $('key-secret-box').hidden = true;
  });
  // the nodes page: filters run on the server; a new filter starts at the first page
  $('nodes-filter').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const f = {};
    for (const [k, id] of Object.entries(NODE_FILTERS)) f[k] = $(id).value.trim();
    // the order by expiry is the API's expiringWithin order (nodes with a certificate)
    if ($('nodes-order').value === 'expiry' && !f.expiringWithin) f.expiringWithin = '366d';
    resetView(views.nodes);
    views.nodes.filters = f;
    show('nodes', true);
  });
  $('nodes-clear').addEventListener('click', () => {
    resetView(views.nodes);
    $('nodes-order').value = 'id';
    syncNodesForm();
    show('nodes', true);
  });
  for (const [name, fields] of [['events', { type: 'events-type', node: 'events-node', since: 'events-since' }],
    ['audit', { action: 'audit-action', node: 'audit-node', since: 'audit-since' }]]) {
    $(name + '-filter').addEventListener('submit', (ev) => {
      ev.preventDefault();
      resetView(views[name]);
      for (const [k, id] of Object.entries(fields)) views[name].filters[k] = $(id).value.trim();
      show(name, true);
    });
  }
  for (const name of Object.keys(views)) wirePager(name);
  $('token-secret-done').addEventListener('click', () => {
    $('token-secret').textContent = '';
    $('token-secret-box').hidden = true;
  });
  if (apiKey()) signedIn().catch(failed);
  else signedOutView();
});
