"""Emit isa/src/table_rows.rs from the probe results (gen.json, caps.json)."""
import json, re, sys
from props import columns
d=json.load(open('gen.json')); d['flat']=json.load(open('genflat.json'))['flat']; caps=json.load(open('caps.json'))
CPUS=['gfx900','gfx906','gfx908','gfx90a']
ENC={'sop2':'Sop2','sop1':'Sop1','sopc':'Sopc','sopk':'Sopk','sopp':'Sopp','smem':'Smem','vop2':'Vop2','vop1':'Vop1','vopc':'Vopc','vop3':'Vop3','ds':'Ds','mubuf':'Mubuf','mtbuf':'Mtbuf','mimg':'Mimg','flat':'Flat','global':'Global','scratch':'Scratch'}
VALID={'sop2':range(0,96),'sopk':range(0,28),'sop1':range(256),'sopc':range(128),'sopp':range(128)}
def camel(n): return ''.join(p[:1].upper()+p[1:] for p in n.split('_'))
def split_ops(s):
    return [t for t in re.split(r', (?![^(\[]*[)\]])',s)] if s else []
REG=re.compile(r'^(\|?)(-?)([sva])(?:(\d+)|\[(\d+):(\d+)\])(\|?)$')
def field_of(fam,cls,num,keep,tok):
    vals={'sop2':{'D':4,'A':2,'B':8},'sop1':{'D':4,'A':2},'sopc':{'A':2,'B':8},'sopk':{'D':4},
          'smem':{'D':4},'vop2':{'D':4,'A':2,'B':8},'vop1':{'D':4,'A':2},'vopc':{'A':2,'B':8},
          'vop3':{'D':4,'E':6,'A':2,'B':8,'C':12},'ds':{'D':4,'A':2,'B':8,'C':12},
          'mubuf':{'B':4,'A':2,'O':1},'mtbuf':{'B':4,'A':2,'O':1},'mimg':{'A':1,'B':2},'flat':{'D':4,'A':2,'B':8},'global':{'D':4,'A':2,'B':8},'scratch':{'D':4,'A':2,'B':8}}[fam]
    if fam=='smem' and num in (0,2) and cls=='s': return 'S'
    if fam in ('mubuf','mtbuf') and num==8: return 'R'
    if fam=='mimg' and cls=='s': return {12:'R',8:'S'}.get(num)
    for f,v in vals.items():
        if v==num and f in keep: return f
    return None
rows=[]; problems=[]
# A fixed family order, so the rows come out in the same order however gen.json was built
# (`gen.py mtbuf mimg` appends the re-probed families at its end).
ORDER=['sop2','sop1','sopc','sopk','sopp','smem','vop2','vop1','vopc','vop3','ds','mubuf','flat','scratch','global','mtbuf','mimg']
assert sorted(ORDER)==sorted(d),sorted(d)
for fam in ORDER:
    ops=d[fam]
    for o,v in ops.items():
        o=int(o)
        if fam in VALID and o not in VALID[fam]: continue
        if fam=='vop3' and 624<=o<=631: continue  # v_interp_*: graphics only, left out
        groups={}
        for cpu in CPUS:
            if cpu not in v: continue
            keep,txt=v[cpu]
            mods=''
            if fam=='vop3':
                c=caps[str(o)][cpu]
                nohi=c['nohi']
                mods=''.join(('P' if (c[k] and c[k]!=nohi) else ('I' if c[k] else 'R')) for k in ['abs0','abs2','clamp','neg0','neg2','omod','opsel0','opsel3','abs1','neg1'])
            key=(txt,tuple(keep),mods)
            groups.setdefault(key,[]).append(cpu)
        for (txt,keep,mods),cpus in groups.items():
            parts=txt.split(None,1)
            name=parts[0]; rest=parts[1] if len(parts)>1 else ''
            suffix=''
            if name.endswith('_e32') or name.endswith('_e64'):
                suffix=name[-4:]; name=name[:-4]
            slots=[]; extra=[]
            toks=split_ops(rest)
            # trailing modifiers are space separated after the last operand
            if toks:
                last=toks[-1].split(' ')
                toks[-1]=last[0]; extra=last[1:]
            for t in toks:
                m=REG.match(t)
                if m:
                    cls=m.group(3); lo=int(m.group(4) or m.group(5)); hi=int(m.group(4) or m.group(6))
                    f=field_of(fam,cls,lo,keep,t)
                    if f is None: problems.append((fam,o,txt,t)); f='?'
                    slots.append((f,cls,hi-lo+1))
                elif t=='vcc': slots.append(('Vcc','s',2))
                elif t=='off': slots.append(('S','off',0))
                elif t=='0x10' and fam=='smem': slots.append(('O','imm',0))
                elif fam in ('sopk','sopp','smem','sopc','ds','vop3'): slots.append(('K',t,0))
                else: problems.append((fam,o,txt,t))
            mask='|'.join('T_'+c[3:].upper() for c in cpus)
            rows.append(dict(fam=fam,op=o,name=name,suffix=suffix,targets=mask,slots=slots,mods=mods,extra=' '.join(extra),txt=txt))
# s_sethalt (SOPP 0x0d) is the probes' marker, so it is probed separately: 's_sethalt 3'.
rows.append(dict(fam='sopp',op=0x0d,name='s_sethalt',suffix='',targets='T_900|T_906|T_908|T_90A',slots=[('K','3',0)],mods='',extra='',txt='s_sethalt 3'))
# Instructions that always carry a 32-bit literal (probed with one: v_madmk_f32 v4, v2, 0x40490fdb, v8).
ALL='T_900|T_906|T_908|T_90A'
for op,name,slots in [(0x17,'v_madmk_f32',[('D','v',1),('A','v',1),('O','lit',0),('B','v',1)]),
                      (0x18,'v_madak_f32',[('D','v',1),('A','v',1),('B','v',1),('O','lit',0)]),
                      (0x24,'v_madmk_f16',[('D','v',1),('A','v',1),('O','lit',0),('B','v',1)]),
                      (0x25,'v_madak_f16',[('D','v',1),('A','v',1),('B','v',1),('O','lit',0)])]:
    rows.append(dict(fam='vop2',op=op,name=name,suffix='',targets=ALL,slots=slots,mods='',extra='',txt=''))
# SMEM instructions without an offset (probed with IMM = 0; llvm rejects IMM = 1 for them).
for op,name,slots in [(0x20,'s_dcache_inv',[]),(0x21,'s_dcache_wb',[]),(0x22,'s_dcache_inv_vol',[]),(0x23,'s_dcache_wb_vol',[]),
                      (0x24,'s_memtime',[('D','s',2)]),(0x25,'s_memrealtime',[('D','s',2)])]:
    rows.append(dict(fam='smem',op=op,name=name,suffix='',targets=ALL,slots=slots,mods='',extra='',txt=''))
# MUBUF cache controls: no operands (probed with all fields 0).
for op,name,tg in [(62,'buffer_wbinvl1',ALL),(63,'buffer_wbinvl1_vol',ALL),(113,'buffer_wbinvl1',ALL),(40,'buffer_wbl2','T_90A'),(41,'buffer_invl2','T_90A')]:
    rows.append(dict(fam='mubuf',op=op,name=name,suffix='',targets=tg,slots=[],mods='',extra='',txt=''))
# EXP (probed by hand: `exp mrt0 v1, v2, v3, v4` and every target/EN/COMPR value): the target,
# then VSRC0..3 (printed as `off` or, with COMPR, as VSRC0, VSRC0, VSRC1, VSRC1).
rows.append(dict(fam='exp',op=0,name='exp',suffix='',targets='T_900|T_906|T_908',slots=[('K','tgt',0),('A','v',1),('B','v',1),('C','v',1),('D','v',1)],mods='',extra='',txt=''))
ENC['exp']='Exp'
rows.append(dict(fam='sopk',op=0x14,name='s_setreg_imm32_b32',suffix='',targets=ALL,slots=[('K','hwreg',0),('O','lit',0)],mods='',extra='',txt=''))
# DS global wave sync (probed by hand: llvm-mc-15 refuses them without the GDS bit, which the
# DS probe leaves clear): ADDR is their one operand, if any.
for op,name,slots in [(0x98,'ds_gws_sema_release_all',[]),(0x99,'ds_gws_init',[('A','v',1)]),(0x9a,'ds_gws_sema_v',[]),
                      (0x9b,'ds_gws_sema_br',[('A','v',1)]),(0x9c,'ds_gws_sema_p',[]),(0x9d,'ds_gws_barrier',[('A','v',1)])]:
    rows.append(dict(fam='ds',op=op,name=name,suffix='',targets=ALL,slots=slots,mods='',extra='',txt=''))
# Per-instruction operand rules (probed by hand with llvm-mc-15 --disassemble: which forms
# each instruction rejects or reads differently); emitted as Row::flags.
FLAGS={
 'SRC0_VREG8':{'v_swap_b32','v_accvgpr_read_b32','v_accvgpr_mov_b32'},
 'NO_SDWA':{'v_mac_f32','v_mac_f16','v_fmac_f32','v_pk_fmac_f16','v_swap_b32','v_nop','v_clrexcp','v_dot2c_f32_f16','v_dot2c_i32_i16','v_dot4c_i32_i8','v_dot8c_i32_i4','v_accvgpr_mov_b32'},
 'NO_DPP':{'v_clrexcp','v_swap_b32','v_accvgpr_mov_b32','v_pk_fmac_f16','v_madmk_f32','v_madak_f32','v_madmk_f16','v_madak_f16'},
 'DPP_MODS_IGNORED':{'v_cndmask_b32','v_dot2c_i32_i16','v_dot4c_i32_i8','v_dot8c_i32_i4'},
 'DPP_FLOAT_MODS':{'v_dot2c_f32_f16'},
 'SDWA_INT_MODS':{'v_cndmask_b32'},
 'LDS_LOAD':{p+n for p in ('buffer_','global_','scratch_') for n in ('load_ubyte','load_sbyte','load_ushort','load_sshort','load_dword')}|{'buffer_load_format_x'},
 'FLOAT_ATOMIC':{p+'_atomic_'+n for p in ('buffer','global','flat') for n in ('add_f32','pk_add_f16','add_f64','min_f64','max_f64')},
 'CACHE_SC1':{'buffer_wbl2','buffer_invl2'},
 'CACHE_GLC':{'buffer_wbl2'},
 'NO_GDS':{'ds_permute_b32','ds_bpermute_b32'},
 'GWS':{'ds_gws_sema_release_all','ds_gws_init','ds_gws_sema_v','ds_gws_sema_br','ds_gws_sema_p','ds_gws_barrier'},
}
def flags_of(r):
    n=r['name']; f=[k for k,v in FLAGS.items() if n in v]
    if n.startswith('v_cmp_class') or n.startswith('v_cmpx_class') or n.startswith('v_ldexp'): f.append('SDWA_INT_SRC1')
    if r['fam']=='mimg' and any(x in n for x in ('image_atomic','_pck','image_get_')): f.append('NO_D16')
    return '|'.join('flag::'+x for x in f) or '0'
print('problems',problems[:20],len(problems),file=sys.stderr)
# unique Op variants, stable order
variants={}
for r in rows:
    v=camel(r['name'])
    variants.setdefault(v,r['name'])
    r['variant']=v
out=[]
out.append('// @generated by isa/tools/emit.py from llvm-mc-15 probes (isa/tools/gen.py, caps.py); edit the probes, not this file.\n')
out.append('isa_table! {\n')
out.append('    ops {\n')
for v,n in variants.items(): out.append(f'        {v} = "{n}",\n')
out.append('    }\n    rows {\n')
CLS={'s':'S','v':'V','a':'A'}
for r in rows:
    sl=[]
    for f,cls,wd in r['slots']:
        if cls in CLS: sl.append(f'({f}, {CLS[cls]}, {wd})')
        elif cls=='off': sl.append(f'(S, Off, 0)')
        elif cls=='lit': sl.append(f'(O, Lit, 0)')
        elif cls=='imm': sl.append(f'(O, Imm, 0)')
        else: sl.append(f'({f}, Imm, 0)')
    out.append(f'        ({ENC[r["fam"]]}, {r["op"]:#05x}, {r["variant"]}, "{r["suffix"]}", {r["targets"]}, [{", ".join(sl)}], "{r["mods"]}", {flags_of(r)}, {columns(r["fam"], r["name"])}),\n')
out.append('    }\n}\n')
open('table_rows.rs','w').write(''.join(out))
print(len(rows),'rows',len(variants),'ops',file=sys.stderr)
