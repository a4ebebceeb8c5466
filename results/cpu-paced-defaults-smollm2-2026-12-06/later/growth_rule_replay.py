import json, glob, os, math
rows=[]
for bj in sorted(glob.glob('results/**/best.json', recursive=True)):
    try: d=json.load(open(bj))
    except Exception: continue
    cr=d.get('certified_rate_req_s')
    if not cr: continue
    best_trial=(d.get('best') or {}).get('trial')
    certs=[c for c in d.get('certifications',[]) if c['trial']==best_trial]
    if not certs: continue
    c=certs[0]
    held=c.get('held_rate_req_s') or cr
    soaks=[s for s in c['soaks'] if s['holds'] and math.isclose(s['rate_req_s'],held,rel_tol=1e-6)]
    info=[]
    for s in soaks:
        st=((s.get('metrics') or {}).get('steady') or {})
        g=st.get('ttft_growth_ms') or {}
        info.append((round((s.get('slo_values') or {}).get('ttft_p95') or -1), round(g.get('estimate',float('nan'))), round(g.get('low',float('nan'))), st.get('growth_tolerance_ms')))
    folder=os.path.dirname(bj)
    xs=set(glob.glob(folder+'/**/crosscheck-vllm-bench-*.json',recursive=True))
    verdicts=[]
    for x in sorted(xs):
        try: j=json.load(open(x))
        except Exception: continue
        r=j.get('rate',0)
        if abs(r-cr)/cr>0.015: continue
        verdicts.append(('H' if j.get('held') else ('?' if j.get('held') is None else 'M'), round((j.get('slo_values') or {}).get('ttft_p95') or -1)))
    if verdicts:
        rows.append((folder.replace('results/','')[:48], round(cr,3), info, verdicts))
for r in rows: print(r)
