import subprocess, struct, sys
MARK = 0xbf8d1234  # s_sethalt 0x1234 style marker
def run(cases, cpu):
    """cases: list of bytes. returns list of (list of text lines) per case, None if llvm rejected."""
    lines=[]
    for c in cases:
        lines.append('['+','.join('0x%02x'%b for b in c)+']')
        lines.append('['+','.join('0x%02x'%b for b in struct.pack('<I',MARK))+']')
    p=subprocess.run(['llvm-mc-15','--disassemble','-arch=amdgcn','-mcpu='+cpu],input='\n'.join(lines)+'\n',capture_output=True,text=True)
    out=[l.strip() for l in p.stdout.splitlines() if l.strip() and l.strip()!='.text']
    bad=set()
    for l in p.stderr.splitlines():
        if l.startswith('<stdin>:') and 'warning' in l:
            bad.add(int(l.split(':')[1]))
    res=[];cur=[];groups=[]
    marktext=None
    # split by marker text: marker known text
    for l in out:
        if l.startswith('s_sethalt'):
            groups.append(cur);cur=[]
        else: cur.append(l)
    assert len(groups)==len(cases),(len(groups),len(cases))
    for i,g in enumerate(groups):
        ln=2*i+1
        res.append(None if ln in bad and not g else (g, ln in bad))
    return res
def w(*ws): return b''.join(struct.pack('<I',x) for x in ws)
