// The Better Compute web console: plain JavaScript over the admin API (/v1/).
// Rules: the API key lives only in sessionStorage and the Authorization header (never in
// a URL, the DOM or a log); every value from the API is inserted with textContent.
'use strict';

const KEY = 'bc.apiKey';
const TENANT = 'bc.tenant';
const PAGES = ['join-requests', 'nodes', 'tokens', 'pools', 'sites', 'refusals'];
const $ = (id) => document.getElementById(id);

let tenant = null; // the tenant whose objects the pages show
let pools = new Map(); // pool id -> name, for the tables

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

// nodes a page of the nodes page shows; the server reads each page from an index
const NODES_PAGE = 100;
// the nodes page's filters and where it is: the cursor of the page shown (null: the
// first), and how many rows came before it (for "nodes 101 to 200")
const nodesView = { filters: {}, cursor: null, offset: 0, next: null, prev: null, shown: 0 };

function t(path) { return '/v1/tenants/' + encodeURIComponent(tenant) + path; }
function seg(id) { return encodeURIComponent(id); }

// ---- table building: text only ----
function cell(tr, value, cls) {
  const td = document.createElement('td');
  td.textContent = value === null || value === undefined ? '' : String(value);
  if (cls) td.className = cls;
  tr.appendChild(td);
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
// says done, and loads the page again
function action(td, label, page, path, done, ask) {
  return button(td, label, async () => {
    if (ask && !confirm(ask)) return;
    await api('POST', t(path));
    status(done);
    await show(page, true);
  });
}

// a pool choice and an Enroll button for a discovered (ramdisk) node in no pool
function enroll(td, n, ps) {
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

function poolName(id) { return id ? (pools.get(id) || id) : ''; }

function when(s) {
  if (!s) return '';
  const d = new Date(s);
  if (isNaN(d)) return s;
  const mins = Math.round((d - Date.now()) / 60000);
  const rel = Math.abs(mins) < 120 ? Math.abs(mins) + ' min' : Math.round(Math.abs(mins) / 60) + ' h';
  return s + (mins >= 0 ? ' (in ' + rel + ')' : ' (' + rel + ' ago)');
}

function failed(e) {
  if (e instanceof ApiError && e.httpStatus === 401) {
    signOut('The server refused the API key (' + e.message + '): sign in again.');
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

// ---- pages ----
async function loadPools() {
  const j = await api('GET', t('/pools'));
  pools = new Map(j.pools.map((p) => [p.id, p.name]));
  return j.pools;
}

const loaders = {
  'join-requests': async () => {
    await loadPools();
    const j = await api('GET', t('/join-requests?state=pending'));
    fill('join-requests-rows', j.joinRequests, 11, (tr, r) => {
      cell(tr, r.id, 'mono');
      cell(tr, r.attestor);
      cell(tr, poolName(r.poolId));
      cell(tr, r.siteId, 'mono');
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
    const ps = await loadPools();
    options($('nodes-pool'), ps, 'any');
    // counts from the store, one page of nodes from the server's filters and cursor
    const v = nodesView;
    const q = new URLSearchParams({ limit: String(NODES_PAGE) });
    for (const [k, val] of Object.entries(v.filters)) if (val) q.set(k, val);
    if (v.cursor) q.set('cursor', v.cursor);
    const [counts, j] = await Promise.all([api('GET', t('/node-counts')),
      api('GET', t('/nodes?' + q.toString()))]);
    const by = Object.entries(counts.byState || {}).map(([s, n]) => n + ' ' + s).join(', ');
    $('nodes-count').textContent = counts.total + ' nodes in this tenant' + (by ? ' (' + by + ')' : '') + '.';
    v.next = j.nextCursor;
    v.prev = j.prevCursor;
    v.shown = j.nodes.length;
    $('nodes-prev').disabled = !v.prev;
    $('nodes-next').disabled = !v.next;
    $('nodes-range').textContent = j.nodes.length
      ? 'nodes ' + (v.offset + 1) + ' to ' + (v.offset + j.nodes.length) + (Object.values(v.filters).some(Boolean) ? ' that match' : '')
      : 'no node matches';
    fill('nodes-rows', j.nodes, 11, (tr, n) => {
      tr.dataset.node = n.id;
      cell(tr, n.id, 'mono');
      cell(tr, n.hostname);
      cell(tr, poolName(n.poolId));
      cell(tr, n.state, 'state-' + n.state);
      cell(tr, n.attestor);
      cell(tr, n.nodeKey);
      cell(tr, n.certificate ? when(n.certificate.notAfter) : 'none');
      cell(tr, n.joinedAt);
      cell(tr, n.role);
      // the command kinds a dispatcher must hold a ramdisk node to (none for others)
      cell(tr, (n.allowedKinds || []).join(' '), 'mono kinds');
      const td = cell(tr, '');
      const path = '/nodes/' + seg(n.id);
      // a discovered machine becomes a machine of a pool, so that it can be deployed
      if (n.role === 'ramdisk' && !n.poolId && n.state !== 'retired') enroll(td, n, ps);
      if (n.state !== 'cordoned' && n.state !== 'retired') action(td, 'Cordon', 'nodes', path + '/cordon', 'Cordoned ' + n.id + '.');
      if (n.state === 'cordoned') action(td, 'Uncordon', 'nodes', path + '/uncordon', 'Uncordoned ' + n.id + '.');
      if (n.state !== 'retired') {
        action(td, 'Retire', 'nodes', path + '/retire', 'Retired ' + n.id + '.',
          'Retire ' + n.id + '? Its certificates are revoked.');
      }
    });
  },
  tokens: async () => {
    const ps = await loadPools();
    const sites = (await api('GET', t('/sites'))).sites;
    options($('token-pool'), ps);
    options($('token-site'), sites);
    const j = await api('GET', t('/tokens'));
    fill('tokens-rows', j.tokens, 9, (tr, k) => {
      cell(tr, k.id, 'mono');
      cell(tr, k.role);
      cell(tr, poolName(k.poolId));
      cell(tr, k.siteId, 'mono');
      cell(tr, k.usesLeft + ' of ' + k.usesTotal);
      cell(tr, when(k.expiresAt));
      cell(tr, k.revokedAt);
      cell(tr, k.description);
      const td = cell(tr, '');
      if (!k.revokedAt) {
        action(td, 'Revoke', 'tokens', '/tokens/' + seg(k.id) + '/revoke', 'Revoked ' + k.id + '.');
      }
    });
  },
  pools: async () => {
    const ps = await loadPools();
    fill('pools-rows', ps, 5, (tr, p) => {
      cell(tr, p.id, 'mono');
      cell(tr, p.name);
      const td = cell(tr, '');
      const pre = document.createElement('pre');
      pre.textContent = JSON.stringify(p.policy, null, 2);
      td.appendChild(pre);
      cell(tr, p.createdAt);
      cell(tr, p.updatedAt);
    });
  },
  sites: async () => {
    const j = await api('GET', t('/sites'));
    // each site's boot lease is in its own answer (GET .../sites/{id}); the first 200
    const shown = j.sites.slice(0, 200);
    const full = await Promise.all(shown.map((s) => api('GET', t('/sites/' + seg(s.id)))));
    fill('sites-rows', full, 6, (tr, s) => {
      const l = s.lease || {};
      cell(tr, s.id, 'mono');
      cell(tr, s.name);
      cell(tr, l.holder || 'none', 'mono');
      cell(tr, l.epoch);
      cell(tr, l.expiresAt);
      cell(tr, s.createdAt);
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
      cell(tr, d.reason, 'mono');
      cell(tr, d.nodeId || e.subject, 'mono');
      cell(tr, d.tokenId, 'mono');
    });
  },
};

function options(select, items, noneLabel) {
  const keep = select.value;
  select.replaceChildren();
  const none = document.createElement('option');
  none.value = '';
  none.textContent = noneLabel || '(none)';
  select.appendChild(none);
  for (const it of items) {
    const o = document.createElement('option');
    o.value = it.id;
    o.textContent = it.name + ' (' + it.id + ')';
    select.appendChild(o);
  }
  if (keep) select.value = keep;
}

async function show(page, keepStatus) {
  if (!PAGES.includes(page)) page = PAGES[0];
  for (const p of ['sign-in', ...PAGES]) $('page-' + p).hidden = p !== page;
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('current', a.dataset.page === page);
  if (!keepStatus) status('');
  document.body.dataset.loaded = '';
  try {
    await loaders[page]();
  } catch (e) {
    failed(e);
  }
  document.body.dataset.loaded = page;
}

// ---- sign in and out ----
function signedOutView(msg) {
  $('nav').hidden = true;
  $('who').hidden = true;
  for (const p of PAGES) $('page-' + p).hidden = true;
  $('page-sign-in').hidden = false;
  document.body.dataset.loaded = 'sign-in';
  status(msg || '', Boolean(msg));
}

function signOut(msg) {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(TENANT);
  tenant = null;
  for (const p of PAGES) $(p + '-rows').replaceChildren();
  signedOutView(msg);
}

async function signedIn() {
  const who = await api('GET', '/v1/whoami');
  const tenants = (await api('GET', '/v1/tenants')).tenants;
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
  $('nav').hidden = false;
  $('who').hidden = false;
  await show(location.hash.slice(1));
}

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
      else failed(e);
    }
  });
  $('sign-out').addEventListener('click', () => signOut('Signed out.'));
  $('tenant').addEventListener('change', (ev) => {
    tenant = ev.target.value;
    sessionStorage.setItem(TENANT, tenant);
    // another tenant's nodes: from their first page, unfiltered
    Object.assign(nodesView, { filters: {}, cursor: null, offset: 0 });
    for (const id of ['nodes-state', 'nodes-pool', 'nodes-hostname', 'nodes-expiring']) $(id).value = '';
    show(location.hash.slice(1));
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
  window.addEventListener('hashchange', () => { if (apiKey()) show(location.hash.slice(1)); });
  $('token-role').addEventListener('change', () => {
    $('token-pool').disabled = $('token-role').value !== 'node';
  });
  $('token-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = {
      role: $('token-role').value,
      uses: Number($('token-uses').value),
      ttlSeconds: Number($('token-ttl').value),
    };
    if (body.role === 'node' && $('token-pool').value) body.poolId = $('token-pool').value;
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
  // the nodes page: filters run on the server; a new filter starts at the first page
  $('nodes-filter').addEventListener('submit', (ev) => {
    ev.preventDefault();
    nodesView.filters = {
      state: $('nodes-state').value,
      pool: $('nodes-pool').value,
      hostname: $('nodes-hostname').value.trim(),
      expiringWithin: $('nodes-expiring').value,
    };
    nodesView.cursor = null;
    nodesView.offset = 0;
    show('nodes', true);
  });
  $('nodes-next').addEventListener('click', () => {
    if (!nodesView.next) return;
    nodesView.offset += nodesView.shown;
    nodesView.cursor = nodesView.next;
    show('nodes', true);
  });
  $('nodes-prev').addEventListener('click', () => {
    if (!nodesView.prev) return;
    nodesView.offset = Math.max(0, nodesView.offset - NODES_PAGE);
    nodesView.cursor = nodesView.prev;
    show('nodes', true);
  });
  $('token-secret-done').addEventListener('click', () => {
    $('token-secret').textContent = '';
    $('token-secret-box').hidden = true;
  });
  if (apiKey()) signedIn().catch(failed);
  else signedOutView();
});
