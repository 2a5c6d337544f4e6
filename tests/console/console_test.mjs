// The web console in headless Chromium, run by tests/e2e/console_test.sh (which starts
// the control plane, the waiting tpm machine and the nodes named in the environment).
// Exits 77 with a message when Chromium cannot start, 1 on any failure.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(path.join(process.argv[2], 'package.json'));
const { chromium } = require('playwright-core');

const env = (k) => {
  if (!process.env[k]) throw new Error(k + ' is not set');
  return process.env[k];
};
const URL = env('BC_URL');
const ROOT_KEY = env('BC_ROOT_KEY');
const TENANT_KEY = env('BC_TENANT_KEY');
const TENANT_NODE = env('BC_TENANT_NODE');
const ROOT_NODE = env('BC_ROOT_NODE');
const REASON = env('BC_REASON');
const RAMDISK_NODE = env('BC_RAMDISK_NODE');
const DISCOVERY_MAC = env('BC_DISCOVERY_MAC');
const SHOTS = process.env.BC_SHOTS || '';

function fail(msg) {
  throw new Error(msg);
}
function check(cond, msg) {
  if (!cond) fail(msg);
}

let browser;
try {
  fs.rmSync(env('BC_PROFILE'), { recursive: true, force: true });
  // a fresh profile (--user-data-dir): playwright passes it for a persistent context
  browser = await chromium.launchPersistentContext(env('BC_PROFILE'), {
    executablePath: env('BC_CHROMIUM'),
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 800 },
    timeout: 60000,
  });
} catch (e) {
  console.log('SKIP: Chromium (' + env('BC_CHROMIUM') + ') cannot start: ' + String(e.message).split('\n')[0]);
  process.exit(77);
}

const urls = [];
const consoleErrors = [];
let page;

async function shot(name) {
  if (!SHOTS) return;
  await page.screenshot({ path: path.join(SHOTS, name + '.png'), fullPage: true });
}

// go to a page and wait until its loader finished
async function open(name) {
  await page.click('nav a[data-page="' + name + '"]');
  await page.waitForSelector('body[data-loaded="' + name + '"]');
  const err = await page.$eval('#status', (s) => (s.className === 'error' ? s.textContent : ''));
  check(!err, name + ': ' + err);
}

// an admin API answer, fetched by the page with the signed-in key
async function apiGet(path) {
  return page.evaluate(async (p) => {
    const r = await fetch(p, { headers: { Authorization: 'Bearer ' + sessionStorage.getItem('bc.apiKey') } });
    return r.json();
  }, path);
}

// go to a hash (a node's page) and wait until its loader finished
async function goHash(hash, name) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForSelector('body[data-loaded="' + name + '"]');
  const err = await page.$eval('#status', (s) => (s.className === 'error' ? s.textContent : ''));
  check(!err, hash + ': ' + err);
}

async function rows(tbody) {
  return page.$$eval('#' + tbody + ' tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
}

async function signIn(key) {
  await page.fill('#api-key', key);
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForSelector('#nav:not([hidden])');
  await page.waitForSelector('body:not([data-loaded=""]):not([data-loaded="sign-in"])');
  check((await page.inputValue('#api-key')) === '', 'the password field still holds the key');
  const html = await page.content();
  check(!html.includes(key), 'the API key is in the DOM');
  check((await page.evaluate(() => sessionStorage.getItem('bc.apiKey'))) === key, 'the key is not in sessionStorage');
  check(!page.url().includes(key.slice(-20)), 'the key is in the URL');
}

async function signOut() {
  await page.click('#sign-out');
  await page.waitForSelector('body[data-loaded="sign-in"]');
  check((await page.evaluate(() => sessionStorage.getItem('bc.apiKey'))) === null, 'sign out kept the key');
}

try {
  page = browser.pages()[0] || (await browser.newPage());
  page.on('request', (r) => urls.push(r.url()));
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  page.on('dialog', (d) => d.accept());

  const resp = await page.goto(URL + '/console/');
  check(resp.status() === 200, '/console/ answered ' + resp.status());
  check((resp.headers()['content-security-policy'] || '').includes("script-src 'self'"), 'no CSP on /console/');
  await page.waitForSelector('body[data-loaded="sign-in"]');
  // signed out, the header shows neither the tenant menu, the search nor Sign out
  for (const sel of ['#who', '#tenant', '#sign-out', '#search-form', '#nav']) {
    check(!(await page.isVisible(sel)), sel + ' is visible while signed out');
  }
  // GET / is the console's page
  const root = await page.evaluate(async () => { const r = await fetch('/'); return [r.status, r.headers.get('content-type')]; });
  check(root[0] === 200 && root[1].startsWith('text/html'), 'GET / answered ' + root);
  await shot('sign-in');
  // the CSP's trusted types: markup from a string cannot reach the page
  const sink = await page.evaluate(() => {
    try {
      document.createElement('div').innerHTML = '<b>x</b>';
      return 'allowed';
    } catch (e) {
      return 'blocked';
    }
  });
  check(sink === 'blocked', 'innerHTML with a string was ' + sink + ' (no trusted types in the CSP)');

  // a wrong key is refused and forgotten
  await page.fill('#api-key', 'bck_key_01aaaaaaaaaaaaaaaaaaaaaaaa_wrongwrongwrongwrongwrong');
  await page.click('#sign-in-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('status').textContent.includes('refused'));
  check((await page.evaluate(() => sessionStorage.getItem('bc.apiKey'))) === null, 'a refused key was kept');

  // ---- root ----
  await signIn(ROOT_KEY);
  await page.waitForSelector('body[data-loaded="overview"]');
  check(await page.isVisible('#who') && await page.isVisible('#sign-out'), 'signed in, no Sign out');
  check((await page.textContent('#key-role')) === ((await apiGet('/v1/whoami')).role || 'admin'), 'the role shown is not whoami\'s');
  // the pending tpm request (bcd join is waiting) and the unknown machine's discovery
  // request (bcd ramdisk is waiting): reload until both show
  let reqs = [];
  for (let i = 0; i < 300; i++) {
    await open('join-requests');
    reqs = (await rows('join-requests-rows')).filter((r) => r[0].startsWith('jr_'));
    if (reqs.length === 2) break;
    await page.waitForTimeout(100);
  }
  check(reqs.length === 2, 'pending join requests: ' + JSON.stringify(reqs));
  const tpmReq = reqs.find((r) => r[1] === 'tpm');
  const discReq = reqs.find((r) => r[1] === 'discovery');
  check(tpmReq && tpmReq[2] === 'tpm', 'tpm join request row: ' + tpmReq);
  check(discReq, 'no discovery join request row: ' + JSON.stringify(reqs));
  // what an approval admits: each request's claims and the CSR hash it is bound to,
  // as the admin API has them
  const apiReqs = await page.evaluate(async () => {
    const r = await fetch('/v1/tenants/root/join-requests?state=pending', {
      headers: { Authorization: 'Bearer ' + sessionStorage.getItem('bc.apiKey') },
    });
    return (await r.json()).joinRequests;
  });
  for (const row of [tpmReq, discReq]) {
    const a = apiReqs.find((x) => x.id === row[0]);
    check(a && /^[0-9a-f]{64}$/.test(a.csrSha256), 'no CSR hash in the API: ' + JSON.stringify(a));
    check(row[7] === a.csrSha256, 'the CSR SHA-256 cell is ' + row[7] + ', the request ' + a.csrSha256);
  }
  check(tpmReq[6] === '', 'tpm request claims: ' + tpmReq[6]);
  const discApi = apiReqs.find((x) => x.id === discReq[0]);
  check(discApi.claims.mac === DISCOVERY_MAC, 'discovery request claims in the API: ' + JSON.stringify(discApi.claims));
  check(discReq[6].split(' ').includes('mac=' + DISCOVERY_MAC), 'the claims cell is "' + discReq[6] + '"');
  check(discReq[6].split(' ').includes('productUuid=' + discApi.claims.productUuid),
    'the claims cell lacks the product UUID: "' + discReq[6] + '"');
  await shot('join-requests');
  // deny the unknown machine, approve the tpm one
  await page.click('#join-requests-rows tr:has(td:text-is("' + discReq[0] + '")) button:text-is("Deny")');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Denied jr_'));
  await page.click('#join-requests-rows tr:has(td:text-is("' + tpmReq[0] + '")) button:text-is("Approve")');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Approved jr_'));

  // the machine joins at its next attempt
  let tpmNode;
  for (let i = 0; i < 300 && !tpmNode; i++) {
    await open('nodes');
    tpmNode = (await rows('nodes-rows')).find((r) => r[4] === 'tpm');
    if (!tpmNode) await page.waitForTimeout(100);
  }
  check(tpmNode, 'the approved tpm machine never appeared in nodes');
  check(tpmNode[3] === 'adopted' && tpmNode[5] === 'tpm' && tpmNode[2] === 'tpm', 'tpm node row: ' + tpmNode);
  check(/^\d{4}-\d\d-\d\dT.*\(in /.test(tpmNode[6]), 'no certificate expiry: ' + tpmNode[6]);
  let all = await rows('nodes-rows');
  check(all.some((r) => r[0] === ROOT_NODE), 'root does not see its token node');
  check(!all.some((r) => r[0] === TENANT_NODE), 'root tenant view shows the tenant node');
  await open('join-requests');
  check((await rows('join-requests-rows'))[0][0] === 'none', 'the approved request is still pending');
  await open('nodes');
  await shot('nodes');

  // the discovered machine: its role and kinds, then Enroll in the pool web
  const rd = '#nodes-rows tr[data-node="' + RAMDISK_NODE + '"]';
  const rdRow = (await rows('nodes-rows')).find((r) => r[0] === RAMDISK_NODE);
  check(rdRow && rdRow[8] === 'ramdisk', 'ramdisk node row: ' + JSON.stringify(rdRow));
  check(rdRow[9].split(' ').includes('disk.wipe') && rdRow[9].split(' ').includes('diag.*'),
    'the ramdisk node shows no allowed kinds: ' + rdRow[9]);
  check(rdRow[2] === '', 'a discovered node in a pool: ' + rdRow[2]);
  check((await page.$$('#nodes-rows tr:not([data-node="' + RAMDISK_NODE + '"]) button:text-is("Enroll")')).length === 0,
    'Enroll offered for a node that is no ramdisk');
  await page.selectOption(rd + ' select.enroll-pool', await page.$eval(rd + ' select.enroll-pool',
    (sel) => [...sel.options].find((o) => o.textContent.startsWith('web (')).value));
  await page.click(rd + ' button:text-is("Enroll")');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Enrolled node_'));
  await page.waitForFunction((sel) => {
    const td = document.querySelector(sel + ' td:nth-child(3)');
    return td && td.textContent === 'web';
  }, rd);
  check((await page.$(rd + ' button:text-is("Enroll")')) === null, 'Enroll still offered once enrolled');

  // a fleet of BC_FILL more nodes: counted by the API, shown a page at a time
  const fill = Number(env('BC_FILL'));
  const count = await page.textContent('#nodes-count');
  const total = Number((count.match(/^(\d+) nodes/) || [])[1]);
  check(total >= fill + 3, 'the nodes count says ' + count);
  check(count.includes((fill / 4) + ' cordoned'), 'no count by state: ' + count);
  const first = await rows('nodes-rows');
  check(first.length === 100, 'the first page has ' + first.length + ' rows');
  check((await page.textContent('#nodes-range')) === 'nodes 1 to 100', 'first range: ' + (await page.textContent('#nodes-range')));
  check(await page.isDisabled('#nodes-prev'), 'the first page has a previous page');
  await page.click('#nodes-next');
  await page.waitForSelector('body[data-loaded="nodes"]');
  const second = await rows('nodes-rows');
  check(second.length === 100 && second[0][0] > first[99][0], 'the next page does not follow the first');
  check((await page.textContent('#nodes-range')) === 'nodes 101 to 200', 'second range');
  await page.click('#nodes-prev');
  await page.waitForSelector('body[data-loaded="nodes"]');
  const ids = (rs) => JSON.stringify(rs.map((r) => r[0]));
  check(ids(await rows('nodes-rows')) === ids(first), 'previous is not the first page');
  // the last node of the fleet, 20,000 rows in, by the server's hostname filter
  const last = 'node_zzfill' + String(fill).padStart(5, '0');
  await page.fill('#nodes-hostname', 'fill-' + fill);
  await page.click('#nodes-apply');
  await page.waitForSelector('body[data-loaded="nodes"]');
  let found = await rows('nodes-rows');
  check(found.length === 1 && found[0][0] === last, 'hostname filter: ' + JSON.stringify(found));
  await page.click('#nodes-rows tr[data-node="' + last + '"] button:text-is("Retire")');
  await page.waitForFunction((sel) => {
    const td = document.querySelector(sel + ' td:nth-child(4)');
    return td && td.textContent === 'retired';
  }, '#nodes-rows tr[data-node="' + last + '"]');
  // state filter: every row of a page is cordoned
  await page.fill('#nodes-hostname', '');
  await page.selectOption('#nodes-state', 'cordoned');
  await page.click('#nodes-apply');
  await page.waitForSelector('body[data-loaded="nodes"]');
  found = await rows('nodes-rows');
  check(found.length === 100 && found.every((r) => r[3] === 'cordoned'), 'state filter');
  await page.selectOption('#nodes-state', '');
  await page.click('#nodes-apply');
  await page.waitForSelector('body[data-loaded="nodes"]');

  // cordon, then retire, the token node
  const row = '#nodes-rows tr[data-node="' + ROOT_NODE + '"]';
  await page.click(row + ' button:text-is("Cordon")');
  await page.waitForSelector('body[data-loaded="nodes"] ' + row + ' button:text-is("Uncordon")');
  check((await page.textContent(row + ' td:nth-child(4)')) === 'cordoned', 'cordon did not cordon');
  await page.click(row + ' button:text-is("Retire")');
  await page.waitForFunction((sel) => {
    const td = document.querySelector(sel + ' td:nth-child(4)');
    return td && td.textContent === 'retired';
  }, row);

  // the root key's tenant selector lists acme: its nodes are there
  await page.selectOption('#tenant', env('BC_TENANT'));
  await page.waitForSelector('body[data-loaded="nodes"]');
  all = await rows('nodes-rows');
  check(all.length === 1 && all[0][0] === TENANT_NODE, 'root, tenant acme: ' + JSON.stringify(all));
  await page.selectOption('#tenant', 'root');
  await page.waitForSelector('body[data-loaded="nodes"]');

  // ---- the overview: the test fleet's counts, as the store counts them ----
  await open('overview');
  const counts = await apiGet('/v1/tenants/root/node-counts');
  const ovTotal = Number(await page.getAttribute('#ov-total', 'data-total'));
  check(ovTotal === counts.total && ovTotal >= fill + 5, 'the overview says ' + ovTotal + ' nodes, the API ' + counts.total);
  const table = async (id) => Object.fromEntries((await rows(id)).map((r) => [r[0], Number(r[1])]));
  const ovState = await table('ov-state');
  check(JSON.stringify(ovState) === JSON.stringify(Object.fromEntries(Object.entries(counts.byState).sort((a, b) => b[1] - a[1]))),
    'overview by state ' + JSON.stringify(ovState) + ', API ' + JSON.stringify(counts.byState));
  // the fleet: FILL filled nodes a quarter cordoned (one retired above), the token
  // nodes (one retired, one cordoned then retired), a site node, a ramdisk node, a tpm node
  check(ovState.retired === 3 && ovState.cordoned === fill / 4 - 1, 'overview by state: ' + JSON.stringify(ovState));
  const ovRole = await table('ov-role');
  check(ovRole.site === 1 && ovRole.ramdisk === 1 && ovRole.node === counts.total - 2, 'overview by role: ' + JSON.stringify(ovRole));
  const ovAtt = await table('ov-attestor');
  check(ovAtt.tpm === 1 && ovAtt.discovery === 1 && ovAtt['join-token'] >= fill + 2, 'overview by attestor: ' + JSON.stringify(ovAtt));
  const ovPool = await table('ov-pool');
  check(ovPool.tpm === 1 && ovPool.web === 3 && ovPool['(no pool)'] >= fill, 'overview by pool: ' + JSON.stringify(ovPool));
  const ovCerts = await table('ov-certs');
  check(ovCerts['expire within 7 days'] === counts.certificates.expiringWithin7d, 'overview certificates: ' + JSON.stringify(ovCerts));
  // the join chart counts the node.joined events of the last hours (the test's joins)
  const joined = (await apiGet('/v1/tenants/root/events?type=node.joined&since=12h&limit=1000')).events.length;
  const bars = await page.$$eval('#ov-joins-chart rect', (rs) => rs.reduce((n, r) => n + Number(r.dataset.value), 0));
  check(joined >= 4 && bars === joined, 'the joins chart shows ' + bars + ' joins, the events ' + joined);
  const refusedBars = await page.$$eval('#ov-refusals-chart rect', (rs) => rs.reduce((n, r) => n + Number(r.dataset.value), 0));
  check(refusedBars >= 2, 'the refusals chart shows ' + refusedBars);
  await shot('overview');
  // a count is a link to the nodes it counts
  await page.click('#ov-role tr[data-key="ramdisk"] a');
  await page.waitForSelector('body[data-loaded="nodes"]');
  all = await rows('nodes-rows');
  check(all.length === 1 && all[0][0] === RAMDISK_NODE, 'the ramdisk count links to ' + JSON.stringify(all));
  await page.click('#nodes-clear');
  await page.waitForSelector('body[data-loaded="nodes"]');

  // ---- a node's page: the tpm node's certificates, inventory and events ----
  await goHash('#node/' + tpmNode[0], 'node');
  const facts = Object.fromEntries((await rows('node-facts')).map((r) => [r[0], r[1]]));
  check(facts.Id === tpmNode[0] && facts.State === 'adopted' && facts.Attestor === 'tpm', 'node facts: ' + JSON.stringify(facts));
  let certs = await rows('node-certs-rows');
  check(certs.length >= 1 && certs[0][2] === 'current' && certs[0][0] === facts['Current certificate'], 'node certificates: ' + JSON.stringify(certs));
  check((await rows('node-events-rows')).some((r) => r[1] === 'node.joined'), 'no node.joined on the node page');
  check((await rows('node-inventory-rows')).length >= 1, 'no inventory on the node page');
  // the tpm attestor bound the EK to it
  const binds = await rows('node-bindings-rows');
  check(binds.some((r) => r[0] === 'tpm-ek' && r[1] !== ''), 'node bindings: ' + JSON.stringify(binds));
  await shot('node');
  // a revoked identity says so (not adopted with no certificate)
  await page.click('#node-actions button:text-is("Revoke identity")');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Revoked the identity'));
  await page.waitForSelector('body[data-loaded="node"]');
  const after = Object.fromEntries((await rows('node-facts')).map((r) => [r[0], r[1]]));
  check(after.State === 'identity revoked' && after['Certificate expires'].startsWith('revoked '),
    'a revoked identity shows ' + after.State + ' / ' + after['Certificate expires']);
  certs = await rows('node-certs-rows');
  check(certs.every((r) => r[2].startsWith('revoked ')), 'certificates after revoke-identity: ' + JSON.stringify(certs));
  await open('nodes');
  const tpmAfter = (await rows('nodes-rows')).find((r) => r[0] === tpmNode[0]);
  check(tpmAfter[3] === 'identity revoked' && tpmAfter[6].startsWith('revoked '), 'nodes row after revoke-identity: ' + tpmAfter);
  // search: a node id opens its page, a product UUID filters
  await page.fill('#search', ROOT_NODE);
  await page.click('#search-form button');
  await page.waitForSelector('body[data-loaded="node"]');
  check((await page.textContent('#node-title')) === ROOT_NODE, 'search by id');
  const rdApi = await apiGet('/v1/tenants/root/nodes/' + RAMDISK_NODE);
  await page.fill('#search', rdApi.productUuid);
  await page.click('#search-form button');
  await page.waitForSelector('body[data-loaded="nodes"]');
  all = await rows('nodes-rows');
  check(all.length === 1 && all[0][0] === RAMDISK_NODE, 'search by product UUID: ' + JSON.stringify(all));
  // at 800 px the ids stay on one line (the table scrolls sideways)
  await page.click('#nodes-clear');
  await page.waitForSelector('body[data-loaded="nodes"]');
  await page.setViewportSize({ width: 800, height: 800 });
  const lines = await page.$$eval('#nodes-rows td.id a', (as) => as.slice(0, 20).map((a) => a.getClientRects().length));
  check(lines.length > 0 && lines.every((n) => n === 1), 'node ids wrap at 800 px: ' + JSON.stringify(lines));
  await shot('nodes-800');
  await page.setViewportSize({ width: 1400, height: 800 });

  // tokens: create shows the secret once; values are text, never markup
  await open('tokens');
  // the form's defaults are valid: a node token in the first pool, valid for 1h
  check((await page.inputValue('#token-pool')) !== '', 'the token form has no pool chosen by default');
  check((await page.inputValue('#token-ttl')) === '1h', 'the token lifetime is not 1h by default');
  // a lifetime that is not a duration is said, not sent
  await page.fill('#token-ttl', '3600 seconds');
  await page.click('#token-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Valid for:'));
  await page.fill('#token-ttl', '24h');
  await page.selectOption('#token-pool', await page.$eval('#token-pool',
    (sel) => [...sel.options].find((o) => o.textContent.startsWith('web (')).value));
  await page.fill('#token-description', '<img src=x id=xss>');
  await page.click('#token-form button[type=submit]');
  await page.waitForSelector('#token-secret-box:not([hidden])');
  const secret = await page.textContent('#token-secret');
  check(/^bct_/.test(secret), 'no token secret shown: ' + secret);
  await page.waitForSelector('body[data-loaded="tokens"]');
  await shot('tokens');
  await page.click('#token-secret-done');
  check((await page.textContent('#token-secret')) === '', 'the secret stayed in the page');
  check((await page.$('#xss')) === null, 'a description became markup');
  let toks = await rows('tokens-rows');
  const mine = toks.find((r) => r[7] === '<img src=x id=xss>');
  check(mine && mine[6] === 'active', 'the new token: ' + JSON.stringify(toks));
  check(/\(in (23|24) h\)$/.test(mine[5]), 'a 24h token expires ' + mine[5]);
  // the used-up tokens of the joins: their state says so and they offer no Revoke
  const used = toks.filter((r) => r[6] === 'used up');
  check(used.length >= 2, 'no used-up token: ' + JSON.stringify(toks));
  for (const u of used) {
    check((await page.$('#tokens-rows tr:has(td:text-is("' + u[0] + '")) button:text-is("Revoke")')) === null,
      'a used-up token offers Revoke: ' + u[0]);
  }
  await page.click('#tokens-rows tr:has(td:text-is("' + mine[0] + '")) button:text-is("Revoke")');
  await page.waitForFunction((id) => [...document.querySelectorAll('#tokens-rows tr')].some(
    (tr) => tr.children[0].textContent === id && tr.children[6].textContent.startsWith('revoked ')), mine[0]);
  check((await page.$('#tokens-rows tr:has(td:text-is("' + mine[0] + '")) button:text-is("Revoke")')) === null,
    'a revoked token offers Revoke');
  await open('tokens');
  check(!(await page.content()).includes(secret), 'the secret is in the page after a reload');

  await open('pools');
  const ps = await rows('pools-rows');
  check(ps.some((r) => r[1] === 'web') && ps.some((r) => r[1] === 'tpm'), 'pools: ' + JSON.stringify(ps));
  await shot('pools');
  await open('sites');
  const srows = await rows('sites-rows');
  const lab = srows.find((r) => r[1] === 'lab');
  check(lab, 'no site lab: ' + JSON.stringify(srows));
  // the lease columns say what the admin API's sites get says
  const sg = await page.evaluate(async (id) => {
    const r = await fetch('/v1/tenants/root/sites/' + encodeURIComponent(id), {
      headers: { Authorization: 'Bearer ' + sessionStorage.getItem('bc.apiKey') } });
    return r.json();
  }, lab[0]);
  // (the holder renews its lease meanwhile: the expiry may have moved on, never back)
  check(lab[2] === (sg.lease.holder || 'none') && lab[3] === String(sg.lease.epoch) &&
        (sg.lease.expiresAt ? lab[4] !== '' && lab[4] <= sg.lease.expiresAt : lab[4] === ''),
        'the lease cells ' + JSON.stringify(lab) + ' are not sites get ' + JSON.stringify(sg.lease));
  check(lab[2] === env('BC_SITE_NODE') && /^[0-9]+$/.test(lab[3]) && lab[4] !== '',
        'the site node holding the lease is not shown: ' + JSON.stringify(lab));
  await shot('sites');
  await open('refusals');
  const refs = await rows('refusals-rows');
  check(refs.some((r) => r[1] === 'security.join.refused' && r[3] === REASON),
    'the refusal feed lacks ' + REASON + ': ' + JSON.stringify(refs));
  check(refs.some((r) => r[1] === 'security.renew.refused' && r[3] !== '' && r[4] === env('BC_RETIRED_NODE')),
    "the refusal feed lacks the retired node's renewal: " + JSON.stringify(refs));
  await shot('refusals');

  // events: filtered by type, the reason whole in its own column
  await open('events');
  await page.fill('#events-type', 'security.join.refused');
  await page.click('#events-apply');
  await page.waitForSelector('body[data-loaded="events"]');
  const evRows = await rows('events-rows');
  check(evRows.length >= 1 && evRows.every((r) => r[1] === 'security.join.refused'), 'events filter: ' + JSON.stringify(evRows));
  // (the denied machine may still be refused meanwhile: its rows come first)
  check(evRows.some((r) => r[3] === REASON) && evRows.every((r) => r[3] !== ''), 'the reason cells: ' + JSON.stringify(evRows.map((r) => r[3])));
  const reasonCut = await page.$eval('#events-rows td.reason', (td) => td.scrollWidth > td.clientWidth + 1);
  check(!reasonCut, 'the reason is cut');
  await shot('events');
  // events by node, pages of 100 back and forth
  await page.fill('#events-type', '');
  await page.click('#events-apply');
  await page.waitForSelector('body[data-loaded="events"]');
  await open('audit');
  const au = await rows('audit-rows');
  check(au.some((r) => r[2] === 'node.retired' || r[2] === 'node.identity-revoked'), 'audit: ' + JSON.stringify(au.slice(0, 5)));
  await page.fill('#audit-node', tpmNode[0]);
  await page.click('#audit-apply');
  await page.waitForSelector('body[data-loaded="audit"]');
  const auNode = await rows('audit-rows');
  check(auNode.length >= 1 && auNode.every((r) => r[3] === tpmNode[0]), 'audit by node: ' + JSON.stringify(auNode));
  await shot('audit');
  await open('workflows');
  const wf = await rows('workflows-rows');
  check(wf.some((r) => r[1] === 'commission'), 'workflows: ' + JSON.stringify(wf));
  await shot('workflows');
  await open('api-keys');
  let keys = await rows('api-keys-rows');
  check(keys.some((r) => r[0].endsWith('(this key)') && r[5] === 'active'), 'api keys: ' + JSON.stringify(keys));
  await page.fill('#key-name', 'console-made');
  await page.fill('#key-ttl', '7d');
  await page.click('#key-form button[type=submit]');
  await page.waitForSelector('#key-secret-box:not([hidden])');
  check(/^bck_/.test(await page.textContent('#key-secret')), 'no key shown');
  await page.waitForSelector('body[data-loaded="api-keys"]');
  await shot('api-keys');
  await page.click('#key-secret-done');
  keys = await rows('api-keys-rows');
  const made = keys.find((r) => r[1] === 'console-made');
  check(made && made[5] === 'active' && /\(in (6|7) days\)$/.test(made[3]), 'the new key: ' + JSON.stringify(made));
  await page.click('#api-keys-rows tr:has(td:text-is("console-made")) button:text-is("Revoke")');
  await page.waitForFunction(() => [...document.querySelectorAll('#api-keys-rows tr')].some(
    (tr) => tr.children[1].textContent === 'console-made' && tr.children[5].textContent.startsWith('revoked ')));
  await open('server');
  const srv = Object.fromEntries((await rows('server-rows')).map((r) => [r[0], r[1]]));
  const srvApi = await apiGet('/v1/server');
  check(srv.Version === srvApi.version && /^\d+\.\d+/.test(srv.Version), 'server version: ' + JSON.stringify(srv));
  check(srv['Trust domain'] !== '' && srv['Trust domain'] === srvApi.trustDomain, 'server trust domain: ' + JSON.stringify(srv));
  check(srv.Attestors.split(' ').includes('tpm') && srv.Attestors.split(' ').includes('discovery'), 'server attestors: ' + srv.Attestors);
  await shot('server');
  // a viewer key of root, when the server has key roles (POST api-keys takes a role)
  // (asked from node, not the page: a server without roles answers 400)
  const viewer = await (async () => {
    const r = await fetch(URL + '/v1/tenants/root/api-keys', {
      method: 'POST',
      headers: { Authorization: 'Bearer ' + ROOT_KEY, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'console-viewer', role: 'viewer' }),
    });
    return { status: r.status, body: await r.json() };
  })();
  await signOut();

  // ---- a tenant key: its tenant only ----
  await signIn(TENANT_KEY);
  check(await page.$eval('#tenant', (s) => s.disabled && s.options.length === 1), 'a tenant key can pick tenants');
  await open('nodes');
  all = await rows('nodes-rows');
  check(all.length === 1 && all[0][0] === TENANT_NODE, 'tenant key sees: ' + JSON.stringify(all));
  await shot('nodes-tenant');
  await open('join-requests');
  check((await rows('join-requests-rows'))[0][0] === 'none', 'a tenant sees join requests of root');
  await open('refusals');
  check(!(await rows('refusals-rows')).some((r) => r[3] === REASON), "a tenant sees root's refusals");
  await open('overview');
  check(Number(await page.getAttribute('#ov-total', 'data-total')) === 1, "the tenant's overview does not count its one node");
  // the API itself refuses another tenant's path to this key, from the browser
  const st = await page.evaluate(async () => (await fetch('/v1/tenants/root/nodes', {
    headers: { Authorization: 'Bearer ' + sessionStorage.getItem('bc.apiKey') } })).status);
  check(st === 404, "the tenant key's GET of root's nodes answered " + st);
  await signOut();

  // ---- a viewer key: every page, and no action offered ----
  if (viewer.status === 201) {
    await signIn(viewer.body.key);
    check((await page.textContent('#key-role')) === 'viewer', 'the viewer key shows role ' + (await page.textContent('#key-role')));
    const ACTIONS = ['Approve', 'Deny', 'Cordon', 'Uncordon', 'Retire', 'Revoke', 'Revoke identity', 'Enroll', 'Cancel', 'Release lease'];
    for (const name of ['overview', 'nodes', 'join-requests', 'tokens', 'pools', 'sites', 'workflows', 'events', 'audit', 'refusals', 'api-keys', 'server']) {
      await open(name);
      const offered = await page.$$eval('main button', (bs, names) => bs.filter((b) => b.offsetParent !== null && names.includes(b.textContent)).map((b) => b.textContent), ACTIONS);
      check(offered.length === 0, 'a viewer is offered ' + offered.join(', ') + ' on ' + name);
      await shot('viewer-' + name);
    }
    check(!(await page.isVisible('#token-form')) && !(await page.isVisible('#key-form')), 'a viewer sees the create forms');
    await goHash('#node/' + RAMDISK_NODE, 'node');
    check((await page.$$('#node-actions button')).length === 0, 'a viewer is offered node actions');
    await shot('viewer-node');
    await signOut();
  } else {
    console.log('viewer part skipped: this server has no key roles (POST api-keys with a role answered ' + viewer.status + ' ' + JSON.stringify(viewer.body) + ')');
  }

  for (const u of urls) {
    check(!u.includes(ROOT_KEY.slice(-20)) && !u.includes(TENANT_KEY.slice(-20)), 'a key in a URL: ' + u);
  }
  const errs = consoleErrors.filter((e) => !/status of 40[134]/.test(e) && !/TrustedHTML/.test(e));
  check(errs.length === 0, 'errors in the page: ' + errs.join('; '));
  console.log('console: ' + urls.length + ' requests, ' + (SHOTS ? 'screenshots in ' + SHOTS : 'no screenshots'));
  await browser.close();
} catch (e) {
  console.error('FAIL: ' + (e.stack || e));
  if (page && SHOTS) await page.screenshot({ path: path.join(SHOTS, 'failure.png') }).catch(() => {});
  await browser.close().catch(() => {});
  process.exit(1);
}
