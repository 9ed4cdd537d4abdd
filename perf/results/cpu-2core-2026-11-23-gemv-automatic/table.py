# python3 table.py <median file>: auto/best = automatic over the fastest strategy; twin-min/best = the faster of automatic and partial-rows (the same kernel on CPUs) over the fastest strategy.
import re,collections,sys,json
t=collections.defaultdict(dict); cv={}
for line in open(sys.argv[1]):
    name,v,u=line.split(); v=float(v)*{'ms':1000,'us':1,'s':1e6,'ns':1e-3}[u]
    m=re.match(r'gemv_stream/(\w)/(\w+)/([\w-]+)/OpenMP/rows:(\d+)/columns:(\d+)',name)
    op,ty,st,r,c=m.groups(); t[(op,ty,int(r),int(c))][st]=v
miss=0; twin=[]
for k in sorted(t):
    d=t[k]; strategies=[s for s in d if s in ('thread-per-row','team-per-dot','partial-rows')]
    best=min(d[s] for s in strategies); r=d['automatic']/best
    kernel=min(d['automatic'],d['partial-rows']); r2=kernel/best
    twin.append(max(d['automatic'],d['partial-rows'])/kernel)
    miss+=r>1.05
    print(k, ' '.join(f"{s[:6]}={d[s]:.1f}" for s in sorted(d)), f"auto/best={r:.3f} twin-min/best={r2:.3f} openblas/auto={d.get('openblas',0)/d['automatic']:.2f}", '<<' if r>1.05 else '')
print('misses',miss,'of',len(t),'; twin spread max',max(twin), 'median', sorted(twin)[len(twin)//2])
