"""For every committed certification whose first soak ran at the search's estimate: the search level at that rate
(its steady-state phrase from study.db, or tune.log) beside whether the soak held, and how often candidate rules flag
the soaks that missed and the ones that held. Read-only; run from the repo root:
    python results/level-vs-first-soak-2026-12-03/analyze.py   (writes level-vs-soak.md here)
Written by a helper of the 2026-12-03 afternoon session."""
import json, glob, os, re, sqlite3
TOL_TTFT = 200.0  # 0.1 * ttft_p95 limit 2 s (all certified studies use ttft_p95=2s)
RE_CHG = re.compile(r"p95 TTFT change ([+-]?\d+) ms \[([+-]?\d+), ([+-]?\d+)\]")
RE_Q = re.compile(r"queued in vLLM ([\d.]+) → ([\d.]+)")
RE_LOG = re.compile(r"\[trial (\d+)\] rate ([\d.]+)/s(?: for (\d+) s)?: (met|missed) \((.*)\) goodput ([\d.]+)/s")

def parse_steady(s):
    out = {}
    if not s: return out
    m = RE_CHG.search(s)
    if m: out['chg'] = tuple(float(x) for x in m.groups())
    elif 'growth not judged' in s: out['chg'] = 'not judged'
    m = RE_Q.search(s)
    if m: out['q'] = tuple(float(x) for x in m.groups())
    return out

def certs_of(d):
    cs = d.get('certifications') or []
    return list(cs.values()) if isinstance(cs, dict) else cs

rows = []; seen = {}
for f in sorted(glob.glob('results/*/best.json') + glob.glob('results/*/*/best.json')):
    d = json.load(open(f)); cs = certs_of(d)
    if not cs: continue
    folder = os.path.dirname(f)[len('results/'):]
    db = os.path.join('results', folder, 'study.db'); log = os.path.join('results', folder, 'tune.log')
    if not os.path.exists(log) and folder.endswith('/first-rule'):
        log = os.path.join('results', os.path.dirname(folder), 'tune.log')  # README: first-rule/ is what the tune.log run wrote
    conn = sqlite3.connect(f'file:{db}?mode=ro', uri=True) if os.path.exists(db) else None
    for c in cs:
        est = c['estimate_req_s']; s0 = c['soaks'][0] if c.get('soaks') else None
        r = dict(study=folder, h200=folder.startswith('h200'), trial=c['trial'], est=est,
                 s0_rate=s0 and s0['rate_req_s'], s0_holds=s0 and s0['holds'], s0_secs=s0 and s0.get('seconds'),
                 s0_reasons='; '.join(s0.get('reasons') or []) if s0 else '', at_est=bool(s0) and abs(s0['rate_req_s'] - est) < 1e-6,
                 nsoaks=len(c.get('soaks') or []), certified=c.get('certified_rate_req_s'), src=None)
        key = (round(s0['rate_req_s'], 9), round(s0.get('seconds') or 0, 6), s0['holds']) if s0 else None
        r['dup_of'] = seen.get(key); seen.setdefault(key, f"{folder} t{c['trial']}")
        lv = None
        if conn is not None:
            row = conn.execute("select a.value_json from trial_user_attributes a join trials t using(trial_id) "
                               "where t.number=? and a.key='result'", (c['trial'],)).fetchall()
            if row:
                levels = [l for l in json.loads(row[0][0]).get('levels', []) if l.get('kind') == 'rate'
                          and l.get('rate') is not None and abs(l['rate'] - est) < 1e-6]
                r['n_match'] = len(levels)
                if levels:
                    l = levels[-1]; srv = l.get('server') or {}
                    lv = dict(dur=l.get('duration_s'), ttft=l.get('ttft_p95_ms'), good=l['goodput_req_s'],
                              thr=l.get('throughput_req_s'), steady=l.get('steady'), passed=l['slo_met'] and l.get('steady_holds', True),
                              qtime=srv.get('queue_time_mean_ms'), wpeak=srv.get('requests_waiting_peak'),
                              lag=l.get('schedule_lag_p95_ms'), host=(l.get('host_cpu') or {}))
                    r['src'] = 'study.db' + ('' if l.get('steady') else ' (no steady record: pre-steadiness code)')
        if lv is None and os.path.exists(log):
            cand = []
            for line in open(log, errors='replace'):
                m = RE_LOG.search(line)
                if m and int(m.group(1)) == c['trial'] and abs(float(m.group(2)) - est) < 0.005 + 1e-9:
                    cand.append(m)
            r['n_match'] = len(cand)
            if cand:
                m = cand[-1]; body = m.group(5)
                tt = re.search(r"ttft_p95 (\d+)ms", body)
                st = body.split('; ', 1)[1] if '; ' in body else None
                lv = dict(dur=float(m.group(3)) if m.group(3) else None, ttft=float(tt.group(1)) if tt else None,
                          good=float(m.group(6)), thr=None, steady=st, passed=m.group(4) == 'met', qtime=None, wpeak=None, lag=None, host={})
                r['src'] = os.path.relpath(log, 'results') + ' (parsed)' + ('' if len(cand) == 1 else f' ({len(cand)} matches, last used)')
        if lv is None and not r['src']:
            r['src'] = 'none (no study.db, no tune.log)' if conn is None and not os.path.exists(log) else 'no matching level'
        if lv:
            p = parse_steady(lv['steady']); lv.update(p)
            lv['ratio'] = lv['good'] / est
            lv['btol'] = max(2.0, est * TOL_TTFT / 1000.0)
        r['lv'] = lv
        rows.append(r)

def fmt(x, nd=0, sign=False):
    if x is None: return '—'
    return f"{x:+.{nd}f}" if sign else f"{x:.{nd}f}"

def rules(r):
    lv = r['lv']
    if not lv: return {}
    chg = lv.get('chg'); q = lv.get('q')
    out = {}
    out['a: TTFT-chg low>0'] = (chg[1] > 0) if isinstance(chg, tuple) else None
    out['a2: TTFT-chg est>0'] = (chg[0] > 0) if isinstance(chg, tuple) else None
    out['a3: TTFT-chg high>tol(200)'] = (chg[2] > TOL_TTFT) if isinstance(chg, tuple) else None
    out['b: queued last/2nd-q>2'] = (q[1] > 2 * max(q[0], 0.05) and q[1] - q[0] >= 0.2) if q else None
    out['b2: queued last-2nd > 0.5*tol'] = (q[1] - q[0] > 0.5 * lv['btol']) if q else None
    out['c: goodput/rate<0.9'] = lv['ratio'] < 0.9
    out['d: ttft p95 > 0.5 SLO'] = (lv['ttft'] > 1000) if lv['ttft'] is not None else None
    out['e: ttft p95 > 0.75 SLO'] = (lv['ttft'] > 1500) if lv['ttft'] is not None else None
    def OR(x, y): return None if x is None and y is None else bool(x) or bool(y)
    def AND(x, y): return None if x is None or y is None else x and y
    out['a OR b2'] = OR(out['a: TTFT-chg low>0'], out['b2: queued last-2nd > 0.5*tol'])
    out['a AND c'] = AND(out['a: TTFT-chg low>0'], out['c: goodput/rate<0.9'])
    out['a OR d'] = OR(out['a: TTFT-chg low>0'], out['d: ttft p95 > 0.5 SLO'])
    return out

L = []
P = L.append
P("# Search level at the estimate vs the certification's first soak\n")
P("Read-only analysis of every committed `results/**/best.json` certification (written by analyze.py here). "
  "All certified studies use SLO ttft_p95=2s (H200 ones also tpot_p95=60ms), so the steady rule's TTFT-growth tolerance is "
  "200 ms and its backlog tolerance is max(2, 0.2·rate) requests (loadtest/steady.py, loadtest/backlog.py).\n")
P("Notes on what the level record holds: `Level.to_dict` stores the steady verdict only as the summary phrase "
  "(`steady`), so for a *passing* level we have the p95 TTFT change estimate and 90 % interval and the mean queued-in-vLLM "
  "count in the **second quarter → last quarter** of the send window (not halves), rounded to 0.1; the backlog growth interval "
  "is not recorded for passing levels (only printed when it fails), so only its tolerance (computed) is shown. "
  "When the backlog basis was in-flight (no vLLM gauges) the phrase omits it. Levels from study.db also carry vLLM's "
  "mean queue time (`qtime`) and waiting-peak; tune.log-parsed levels do not.\n")
P("Columns: est = estimate (req/s); s0 = first soak rate (=est unless noted), held?, its length; dur = level length (s); "
  "ttft = level p95 TTFT ms (SLO 2000); chg = p95 TTFT change last−first half, ms [90 % interval] (tol 200); "
  "queued = mean queued in vLLM 2nd→last quarter (backlog tol); g/r = level goodput / rate; qtime = vLLM mean queue time ms; wpk = waiting peak.\n")
P("| study | HW | trial | est | s0 held? (s) | dur | ttft | chg [lo, hi] | queued 2q→4q (tol) | g/r | qtime | wpk | source | first-soak reasons |")
P("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    lv = r['lv'] or {}
    held = '—' if r['s0_holds'] is None else ('HELD' if r['s0_holds'] else '**MISSED**')
    s0 = f"{held} ({fmt(r['s0_secs'])})" + ('' if r['at_est'] else f" ⚠ s0 at {fmt(r['s0_rate'],3)}")
    chg = lv.get('chg')
    chg_s = (f"{chg[0]:+.0f} [{chg[1]:+.0f}, {chg[2]:+.0f}]" if isinstance(chg, tuple) else (chg or ('n/a' if lv else '—')))
    q = lv.get('q'); q_s = f"{q[0]:.1f}→{q[1]:.1f} ({lv['btol']:.1f})" if q else ('n/a' if lv else '—')
    src = r['src'] + (f"; dup of {r['dup_of']}" if r['dup_of'] else '')
    P(f"| {r['study']} | {'H200' if r['h200'] else 'CPU'} | {r['trial']} | {r['est']:.3f} | {s0} | {fmt(lv.get('dur'))} | {fmt(lv.get('ttft'))} | {chg_s} | {q_s} | "
      f"{fmt(lv.get('ratio'),2)} | {fmt(lv.get('qtime'))} | {fmt(lv.get('wpeak'))} | {src} | {r['s0_reasons'][:140]} |")

# summary
usable = [r for r in rows if r['at_est'] and r['lv'] and not r['dup_of']]
not_at = [r for r in rows if not r['at_est']]
dups = [r for r in rows if r['dup_of']]
nolv = [r for r in rows if r['at_est'] and not r['lv'] and not r['dup_of']]
P("\n## Summary\n")
P(f"- Certifications: {len(rows)} in {len({r['study'] for r in rows})} best.json files. First soak not at the estimate: {len(not_at)} (skipped). "
  f"Duplicates (same first soak reused in another best.json): {len(dups)} ({', '.join(r['study']+' t'+str(r['trial']) for r in dups)}), counted once. "
  f"No level data for the estimate: {len(nolv)} ({', '.join(r['study']+' t'+str(r['trial']) for r in nolv)}).")
miss = [r for r in usable if not r['s0_holds']]; held = [r for r in usable if r['s0_holds']]
P(f"- Usable: {len(usable)} first soaks at the estimate with the search level found: {len(miss)} MISSED, {len(held)} HELD "
  f"(H200: {sum(r['h200'] for r in miss)} missed / {sum(r['h200'] for r in held)} held; CPU: {sum(not r['h200'] for r in miss)} / {sum(not r['h200'] for r in held)}).\n")
names = list(rules(usable[0]).keys())
P("| rule | flags MISSED (of judgeable) | false alarms on HELD (of judgeable) | H200 missed / held flagged |")
P("|---|---|---|---|")
for n in names:
    def cnt(rs):
        v = [rules(r)[n] for r in rs]; j = [x for x in v if x is not None]
        return sum(j), len(j)
    fm, jm = cnt(miss); fh, jh = cnt(held)
    hm, hjm = cnt([r for r in miss if r['h200']]); hh, hjh = cnt([r for r in held if r['h200']])
    P(f"| {n} | {fm}/{jm} | {fh}/{jh} | {hm}/{hjm} · {hh}/{hjh} |")
import statistics as stt
def med(rs, f):
    v = [f(r) for r in rs]; v = [x for x in v if x is not None]
    return (f"{stt.median(v):.2f} (n={len(v)}, range {min(v):.2f}–{max(v):.2f})" if v else '—')
def mtype(r):
    x = r['s0_reasons']
    return 'growth/backlog' if ('grew' in x) else 'tail-only'
P(f"\nKinds of MISSED first soaks (usable): " + ', '.join(f"{k}: {sum(mtype(r)==k for r in miss)}" for k in ('growth/backlog','tail-only'))
  + f"; lost early (soak < 40 s): {sum((r['s0_secs'] or 0) < 40 for r in miss)}. "
  "Rule b uses last/2nd-quarter > 2 with the 2nd quarter floored at 0.05 and a difference ≥ 0.2 (rounding guard); b2: difference > half the backlog tolerance. "
  "a/a2/a3/b/b2 are not judgeable for the 4 pre-steadiness H200 levels (and a* for 'growth not judged' levels).")
P("\nMedians, MISSED vs HELD:\n")
for lab, f in [('goodput/rate', lambda r: r['lv']['ratio']),
               ('level ttft p95 ms', lambda r: r['lv']['ttft']),
               ('TTFT change estimate ms', lambda r: r['lv']['chg'][0] if isinstance(r['lv'].get('chg'), tuple) else None),
               ('TTFT change interval low ms', lambda r: r['lv']['chg'][1] if isinstance(r['lv'].get('chg'), tuple) else None),
               ('TTFT change interval high ms', lambda r: r['lv']['chg'][2] if isinstance(r['lv'].get('chg'), tuple) else None),
               ('queued last quarter − 2nd quarter', lambda r: (r['lv']['q'][1] - r['lv']['q'][0]) if r['lv'].get('q') else None),
               ('level duration s', lambda r: r['lv']['dur']),
               ('vLLM mean queue time ms', lambda r: r['lv']['qtime'])]:
    P(f"- {lab}: MISSED {med(miss, f)}; HELD {med(held, f)}")
P("\nPer-row rule flags (usable rows):\n")
P("| study | trial | s0 | " + " | ".join(n.split(':')[0] for n in names) + " |")
P("|---|---|---|" + "---|" * len(names))
for r in usable:
    fl = rules(r)
    P(f"| {r['study']} | {r['trial']} | {'held' if r['s0_holds'] else 'MISSED'} | " + " | ".join('—' if fl[n] is None else ('✔' if fl[n] else '·') for n in names) + " |")
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'level-vs-soak.md'), 'w').write('\n'.join(L) + '\n')
print('\n'.join(L))
