# VOP3 modifier capabilities: for each op with its base template, test each modifier bit alone.
from mc import *
import json
d=json.load(open('gen.json'))
CPUS=['gfx900','gfx906','gfx908','gfx90a']
def base(o,keep):
    f={'D':4,'E':6 ,'A':0x102,'B':0x108,'C':12}
    dw0=0xd0000000|o<<16|(f['D'] if 'D' in keep else 0)
    dw1=(f['C']<<18 if 'C' in keep else 0)|(f['B']<<9 if 'B' in keep else 0)|(f['A'] if 'A' in keep else 0)
    if 'E' in keep and o not in (281,282,283,284,285,286,480,481,488,489) : pass
    return dw0,dw1
mods={'abs0':(1<<8,0),'neg0':(0,1<<29),'clamp':(1<<15,0),'omod':(0,1<<27),'opsel0':(1<<11,0),'opsel3':(1<<14,0),'abs2':(1<<10,0),'abs1':(1<<9,0),'neg1':(0,1<<30),'neg2':(0,1<<31),'nohi':(0,0)}
out={}
for cpu in CPUS:
    ops=[(int(o),v[cpu][0]) for o,v in d['vop3'].items() if cpu in v]
    cases=[];idx=[]
    for o,keep in ops:
        sd=6<<8 if o in (281,282,283,284,285,286,480,481,488,489) else 0
        b0,b1=base(o,keep)
        b0|=sd
        for m,(x0,x1) in mods.items():
            if o>=896 and m=='nohi':
                cases.append(w(b0,b1|0x18000000)); idx.append((o,m))
            else:
                cases.append(w(b0|x0,b1|x1)); idx.append((o,m))
    r=run(cases,cpu)
    for (o,m),x in zip(idx,r):
        out.setdefault(str(o),{}).setdefault(cpu,{})[m]=x[0][0] if x else None
json.dump(out,open('caps.json','w'),indent=0)
