# Table of medians: python3 table.py <median file> (graph files: replace gemv_graph by gemv_stream first).
# auto/best: automatic over the fastest of thread-per-row, team-per-dot, partial-rows (T: thread-per-row not run: 30 us-10 ms here).
import re,collections,sys
t=collections.defaultdict(dict)
for line in open(sys.argv[1]):
    name,v,u=line.split()
    v=float(v)*(1000 if u=='ms' else 1)
    m=re.match(r'gemv_(stream|tuning)/(\w)/(\w+)/([\w-]+)/Cuda/rows:(\d+)/columns:(\d+)(/rows_per_team:(\d+))?',name)
    kind,op,ty,st,r,c,_,M=m.groups()
    t[(op,ty,int(r),int(c))][st if kind=='stream' else f"pr{M}"]=v
miss=0
for k in sorted(t):
    d=t[k]; cands={s:d[s] for s in d if s in('thread-per-row','team-per-dot','partial-rows')}
    best=min(cands.values()); r=d['automatic']/best; miss+=r>1.05
    print(k, ' '.join(f"{s[:6]}={d[s]:.2f}" for s in sorted(d)), f"auto/best={r:.3f} auto/kk={d['automatic']/d['kokkos-kernels']:.2f}", '<<' if r>1.05 else '')
print('misses',miss,'of',len(t))
