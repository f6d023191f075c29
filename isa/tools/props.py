"""Instruction properties of a row, derived once from its mnemonic and encoding.

emit.py writes them as the last columns of every row of table_rows.rs (Row::src, Row::mem,
Row::cmp, Row::lit, Row::props), so the decoder, the disassembler and the interpreter read
them from the row instead of parsing the mnemonic at run time. `isa/tests/row_props.rs`
checks every row's columns against the same derivations written in Rust.
"""

def src_type(n):
    """The source type: the last f16/f32/f64 token of the mnemonic (Int if none)."""
    best = max(((n.rfind(t), t) for t in ('f16', 'f32', 'f64')), key=lambda x: x[0])
    return {'f16': 'F16', 'f32': 'F32', 'f64': 'F64'}[best[1]] if best[0] >= 0 else 'Int'

ATOMIC = {'swap': 'Swap', 'cmpswap': 'CmpSwap', 'add': 'Add', 'sub': 'Sub', 'smin': 'SMin',
          'umin': 'UMin', 'smax': 'SMax', 'umax': 'UMax', 'and': 'And', 'or': 'Or', 'xor': 'Xor',
          'inc': 'Inc', 'dec': 'Dec', 'add_f32': 'FAdd', 'add_f64': 'FAdd', 'min_f64': 'FMin',
          'pk_add_f16': 'PkAddF16', 'max_f64': 'FMax'}

def ds_atomic(rest):
    """`ds_<op>[_rtn]_<type>` read-modify-writes: (op, wide) or None."""
    rest = rest.replace('_rtn', '')
    if '_' not in rest:
        return None
    op, ty = rest.rsplit('_', 1)
    wide = ty in ('u64', 'i64', 'b64', 'f64')
    table = [(('add', ('u32', 'u64')), 'Add'), (('sub', ('u32', 'u64')), 'Sub'), (('inc', None), 'Inc'),
             (('dec', None), 'Dec'), (('min', ('i32', 'i64')), 'SMin'), (('max', ('i32', 'i64')), 'SMax'),
             (('min', ('u32', 'u64')), 'UMin'), (('max', ('u32', 'u64')), 'UMax'),
             (('min', ('f32', 'f64')), 'FMin'), (('max', ('f32', 'f64')), 'FMax'), (('and', None), 'And'),
             (('or', None), 'Or'), (('xor', None), 'Xor'), (('wrxchg', None), 'Swap'),
             (('cmpst', ('b32', 'b64')), 'CmpSwap'), (('add', ('f32', 'f64')), 'FAdd')]
    for (o, tys), a in table:
        if op == o and (tys is None or ty in tys):
            return (a, wide)
    return None

SIZE = {'ubyte': (1, False), 'u8': (1, False), 'sbyte': (1, True), 'i8': (1, True),
        'ushort': (2, False), 'u16': (2, False), 'sshort': (2, True), 'i16': (2, True),
        'byte': (1, False), 'b8': (1, False), 'short': (2, False), 'b16': (2, False),
        'dword': (4, False), 'b32': (4, False), 'dwordx2': (8, False), 'b64': (8, False),
        'dwordx3': (12, False), 'b96': (12, False), 'dwordx4': (16, False), 'b128': (16, False)}

def mem_kind(fam, n):
    """What a DS/MUBUF/FLAT/GLOBAL/SCRATCH/SMEM instruction does to memory, as Rust source of
    a `MemKind` built with table.rs's column helpers."""
    if fam not in ('ds', 'mubuf', 'flat', 'global', 'scratch', 'smem') or 'format' in n:
        return 'Other'
    if n.endswith('_d16_hi'):
        n, half = n[:-7], 'Hi'
    elif n.endswith('_d16'):
        n, half = n[:-4], 'Lo'
    else:
        half = 'Full'
    pos = n.find('atomic_')
    if pos >= 0:
        rest = n[pos + 7:]
        wide = rest.endswith('_x2') or rest.endswith('f64')
        base = rest
        while base.endswith('_x2'):
            base = base[:-3]
        if base not in ATOMIC:
            return 'Other'
        return f'atomic({ATOMIC[base]}, {str(wide).lower()})'
    if n.startswith('ds_'):
        k = ds_atomic(n[3:])
        if k:
            return f'atomic({k[0]}, {str(k[1]).lower()})'
    for prefix, load in [('global_load_', True), ('global_store_', False), ('buffer_load_', True),
                         ('buffer_store_', False), ('scratch_load_', True), ('scratch_store_', False),
                         ('flat_load_', True), ('flat_store_', False), ('ds_read_', True),
                         ('ds_write_', False), ('s_store_', False), ('s_buffer_store_', False)]:
        if n.startswith(prefix):
            s = SIZE.get(n[len(prefix):])
            if s is None or not (half == 'Full' or s[0] <= 2):
                return 'Other'
            if load:
                return f'load({s[0]}, {str(s[1]).lower()}, {half})'
            return f'store({s[0]}, {half})'
    return 'Other'

LT, EQ, GT, UN = 1, 2, 4, 8
TRUTH = {'f': 0, 'lt': LT, 'eq': EQ, 'le': LT | EQ, 'gt': GT, 'lg': LT | GT, 'ne': LT | GT,
         'ge': EQ | GT, 'o': LT | EQ | GT, 'u': UN, 'nge': LT | UN, 'nlg': EQ | UN,
         'ngt': LT | EQ | UN, 'nle': GT | UN, 'neq': LT | GT | UN, 'nlt': EQ | GT | UN,
         'tru': LT | EQ | GT | UN, 't': LT | EQ | GT | UN}
CMP_TYPE = {'f16': 'F16', 'f32': 'F32', 'f64': 'F64', 'i16': 'I16', 'u16': 'U16', 'i32': 'I32',
            'u32': 'U32', 'i64': 'I64', 'u64': 'U64'}

def cmp(fam, n):
    """A VOPC/VOP3 `v_cmp[x]_<cond>_<type>`, as Rust source of an `Option<Cmp>`."""
    if fam not in ('vopc', 'vop3'):
        return 'None'
    if n.startswith('v_cmpx_'):
        exe, rest = True, n[7:]
    elif n.startswith('v_cmp_'):
        exe, rest = False, n[6:]
    else:
        return 'None'
    if '_' not in rest:
        return 'None'
    cond, ty = rest.rsplit('_', 1)
    if ty not in CMP_TYPE or (cond != 'class' and cond not in TRUTH):
        return 'None'
    truth = f'Some({TRUTH[cond]})' if cond in TRUTH else 'None'
    return f'cmp("{cond}", {CMP_TYPE[ty]}, {str(exe).lower()}, {truth})'

def lit(n):
    """How constants of sources 0 and 1 print (disasm's `Lit`): the last type token."""
    if n.startswith('v_mfma_f64'):
        return 'F64'
    if n.startswith('v_pk_') and (n.endswith('_f32') or n == 'v_pk_mov_b32'):
        return 'Packed32'
    if n in ('v_sat_pk_u8_i16', 'v_sad_u16', 'v_dot2c_i32_i16', 'v_madmk_f16') or n.startswith('v_mfma'):
        return 'No'
    last = next((t for t in reversed(n.split('_'))
                 if len(t) >= 2 and t[0] in 'fiub' and t[1:].isdigit()), None)
    return {'f16': 'Float', 'i16': 'Int', 'u16': 'Int', 'b16': 'Int'}.get(last, 'No')

# Row::props bits (table::prop), each a fact a decoder/printer/interpreter site needs.
PROPS = [
    ('S_BUFFER', lambda n: n.startswith('s_buffer_')),
    ('BRANCH', lambda n: n == 's_branch' or n.startswith('s_cbranch_')),
    ('MFMA', lambda n: n.startswith('v_mfma')),
    ('ACCVGPR', lambda n: n.startswith('v_accvgpr')),
    ('NAMED_LOAD', lambda n: '_load_' in n),
    ('IMAGE_ATOMIC', lambda n: n.startswith('image_atomic')),
    ('IMAGE_STORE', lambda n: n.startswith('image_store')),
    ('IMAGE_GATHER4', lambda n: n.startswith('image_gather4')),
    ('CMPSWAP_SUFFIX', lambda n: n.endswith('_cmpswap')),
    ('DS2', lambda n: '2st64' in n or 'read2' in n or 'write2' in n),
    ('DS2_B64', lambda n: n.endswith('b64')),
    ('DS2_ST64', lambda n: 'st64' in n),
    ('DS_READ2', lambda n: n.startswith('ds_read2')),
    ('DS_RTN', lambda n: '_rtn_' in n),
    ('SRC2_NO_LIT', lambda n: n.startswith('v_dot') or n in ('v_mad_i32_i16', 'v_mad_u32_u16')),
    ('INT_SRC1', lambda n: n in ('v_ldexp_f16', 'v_ldexp_f32', 'v_ldexp_f64', 'v_trig_preop_f64',
                                 'v_cvt_pkaccum_u8_f32')),
    ('INT_SRC12', lambda n: n == 'v_cvt_pk_u8_f32'),
    ('ATOMIC', lambda n: '_atomic_' in n),
    ('CMPSWAP', lambda n: 'cmpswap' in n),
    ('HWREG', lambda n: n.startswith('s_getreg') or n.startswith('s_setreg')),
    ('SENDMSG', lambda n: n.startswith('s_sendmsg')),
    ('MIX', lambda n: '_mix' in n),
    ('SMEM_NO_GLC', lambda n: n.startswith('s_dcache') or n.startswith('s_atc_probe') or n.startswith('s_mem')),
    ('DS_DUAL', lambda n: 'read2' in n or 'write2' in n or 'wrxchg2' in n),
    ('BUFFER_ATOMIC', lambda n: n.startswith('buffer_atomic')),
]

def props(n):
    return '|'.join('prop::' + k for k, f in PROPS if f(n)) or '0'

def columns(fam, n):
    """The row's property columns, as they follow its flags in table_rows.rs."""
    return f'{src_type(n)}, {mem_kind(fam, n)}, {cmp(fam, n)}, {lit(n)}, {props(n)}'
