from mc import *
import json, re, itertools
CPUS=['gfx900','gfx906','gfx908','gfx90a']
# family: (list of dwords builder from field dict, fields {name: (dword, lo, bits, probe)}, op bits)
F={
 'sop2':(lambda f:[0x80000000|f['op']<<23|f['D']<<16|f['B']<<8|f['A']],{'D':4,'A':2,'B':8},128),
 'sop1':(lambda f:[0xbe800000|f['D']<<16|f['op']<<8|f['A']],{'D':4,'A':2},256),
 'sopc':(lambda f:[0xbf000000|f['op']<<16|f['B']<<8|f['A']],{'A':2,'B':8},128),
 'sopk':(lambda f:[0xb0000000|f['op']<<23|f['D']<<16|f['K']],{'D':4,'K':0x1234},32),
 'sopp':(lambda f:[0xbf800000|f['op']<<16|f['K']],{'K':3},128),
 'smem':(lambda f:[0xc0020000|f['op']<<18|f['D']<<6|f['S'],f['O']],{'D':4,'S':1,'O':0x10},256),
 'vop2':(lambda f:[f['op']<<25|f['D']<<17|f['B']<<9|f['A']],{'D':4,'A':0x102,'B':8},64),
 'vop1':(lambda f:[0x7e000000|f['D']<<17|f['op']<<9|f['A']],{'D':4,'A':0x102},256),
 'vopc':(lambda f:[0x7c000000|f['op']<<17|f['B']<<9|f['A']],{'A':0x102,'B':8},256),
 'vop3':(lambda f:[0xd0000000|f['op']<<16|f['E']<<8|f['D'],f['C']<<18|f['B']<<9|f['A']],{'D':4,'E':6,'A':0x102,'B':0x108,'C':12},1024),
 'ds':(lambda f:[0xd8000000|f['op']<<17|0x10,f['D']<<24|f['C']<<16|f['B']<<8|f['A']],{'D':4,'A':2,'B':8,'C':12},256),
 'mubuf':(lambda f:[0xe0000000|f['op']<<18|1<<12|0x10,f['O']<<24|f['R']<<16|f['B']<<8|f['A']],{'A':2,'B':4,'R':2,'O':1},128),
 # MTBUF: DFMT = 1, NFMT = 0 (the default format, printed as nothing)
 # MIMG: DMASK = 0xf; SSAMP is SGPR 4*S (llvm rejects a nonzero SSAMP on the ops without one)
 'mimg':(lambda f:[0xf0000000|f['op']<<18|0xf<<8,f['S']<<21|f['R']<<16|f['B']<<8|f['A']],{'A':1,'B':2,'R':3,'S':2},128),
 'mtbuf':(lambda f:[0xe8000000|1<<19|f['op']<<15|1<<12|0x10,f['O']<<24|f['R']<<16|f['B']<<8|f['A']],{'A':2,'B':4,'R':2,'O':1},16),
}
for seg,name in [(0,'flat'),(1,'scratch'),(2,'global')]:
    F[name]=((lambda seg: (lambda f:[0xdc000000|f['op']<<18|seg<<14|0x10,f['D']<<24|f['S']<<16|f['B']<<8|f['A']]))(seg),{'D':4,'A':2,'B':8,'S':0x7f},128)
# `python3 gen.py mtbuf` re-probes only the named families and merges them into gen.json.
import sys
ONLY=sys.argv[1:]
out=json.load(open('gen.json')) if ONLY else {}
for fam,(build,fields,nops) in F.items():
    if ONLY and fam not in ONLY: continue
    names=list(fields)
    # variants: all subsets of fields zeroed, ordered by number of fields kept (desc)
    variants=[]
    for k in range(len(names),-1,-1):
        for keep in itertools.combinations(names,k):
            variants.append(keep)
    res={}
    for cpu in CPUS:
        pending={o for o in range(nops) if not(fam=='sopp' and o==0xd)}
        for keep in variants:
            ops=sorted(pending)
            if not ops: break
            cases=[]
            for o in ops:
                f={n:(fields[n] if n in keep else (0x7f if (fam in('flat','scratch','global') and n=='S') else 0)) for n in names}; f['op']=o
                cases.append(w(*build(f)))
            r=run(cases,cpu)
            for o,x in zip(ops,r):
                if x is not None and len(x[0])==1:
                    res.setdefault(o,{})[cpu]=(list(keep),x[0][0]); pending.discard(o)
    out[fam]=res
    print(fam,len(res))
json.dump(out,open('gen.json','w'),indent=0)
